// Types of scripts/eslint-layers.js, for the tests that read its table.
import type { ESLint } from 'eslint';

export declare const LEAVES: readonly string[];
export declare const LAYERS: Readonly<Record<string, readonly string[]>>;
export declare function partOf(file: string, srcDir: string): string | undefined;
declare const plugin: ESLint.Plugin;
export default plugin;
