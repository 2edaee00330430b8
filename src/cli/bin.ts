/** The process entry of the `jobvisor` command. */
import { main } from './main.ts';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`jobvisor: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
