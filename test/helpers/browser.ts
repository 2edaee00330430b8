/**
 * Debian's Chromium, driven by playwright-core (never a downloaded browser),
 * launched the one way the browser tests need: headless, without the sandbox
 * when the tests run as root, plus any flags a test adds (a host-resolver rule).
 */
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM, findTool } from './tools.ts';

export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: findTool(CHROMIUM) as string,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), ...extraArgs],
  });
}
