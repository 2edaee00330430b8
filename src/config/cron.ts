/**
 * Cron expressions as schedules take them: 5 fields (minute hour day-of-month
 * month day-of-week) or 6 (a seconds field first), or one of cron-parser's
 * `@` names (`@daily`, `@hourly`, `@weekly`, …). cron-parser itself takes 1 to
 * 6 fields and fills the missing ones from the left: `*\/5 * * *` (4 fields)
 * became `0 * *\/5 * * *`, every minute of hours 0, 5, 10, 15 and 20 instead of
 * anything its author meant. Every parse goes through parseCron, so a config
 * file, run()'s options, the scheduler and the dashboard read an expression alike.
 */
import { CronExpressionParser, type CronExpression, type CronExpressionOptions } from 'cron-parser';
import { messageOf } from '../errors.ts';

/**
 * Why `cron` is not a schedule's cron expression (naming the count of fields), or
 * undefined when it is one. `timezone` is checked too, when given.
 */
export function cronProblem(cron: string, timezone?: string | null): string | undefined {
  try {
    parseCron(cron, timezone ? { tz: timezone } : {});
    return undefined;
  } catch (err) {
    return messageOf(err);
  }
}

/**
 * Parses a 5- or 6-field expression (or an `@` name) with cron-parser.
 * @throws Error naming the field count, or cron-parser's reason.
 */
export function parseCron(cron: string, options: CronExpressionOptions = {}): CronExpression {
  const text = cron.trim();
  const fields = text === '' ? 0 : text.split(/\s+/).length;
  if (text.startsWith('@') && fields === 1) {
    try {
      return CronExpressionParser.parse(text, options);
    } catch (err) {
      throw new Error(
        `${JSON.stringify(cron)} is not a cron expression: ${text} is not one of the @ names (@yearly, @monthly, @weekly, @daily, @hourly, …)`,
        { cause: err },
      );
    }
  }
  if (fields !== 5 && fields !== 6)
    throw new Error(
      `${JSON.stringify(cron)} has ${fields} field${fields === 1 ? '' : 's'}: a cron expression has 5 (minute hour day-of-month month day-of-week) or 6 (with seconds first)`,
    );
  try {
    return CronExpressionParser.parse(text, options);
  } catch (err) {
    throw new Error(`${JSON.stringify(cron)} is not a valid cron expression: ${messageOf(err)}`, {
      cause: err,
    });
  }
}
