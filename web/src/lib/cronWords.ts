// A cron expression in the reader's words. The API describes a schedule in
// English (its words serve the CLI and scripts too); a reader of another
// language gets cronstrue's words for the same expression, read in the
// dialect DataJump reads it in (docs/CRON.md): with `?` it is Quartz,
// Sunday 1; without, Sunday 0.

import cronstrue from 'cronstrue';
import 'cronstrue/locales/zh_CN';

/** cronstrue's name of each language the UI speaks besides English. */
const CRONSTRUE_LOCALES: Record<string, string> = { 'zh-CN': 'zh_CN' };

/** A description and whether it is the server's English. */
export interface CronWords {
  text: string;
  fromServer: boolean;
}

/**
 * `expression` described for a reader of `language`: the server's
 * `english` for English (and the pseudo-locale), else cronstrue's words,
 * falling back to `english` when cronstrue cannot read it.
 */
export function describeCron(expression: string | null | undefined, english: string | null | undefined, language: string): CronWords | null {
  const locale = CRONSTRUE_LOCALES[language];
  if (locale && expression) {
    try {
      const text = cronstrue.toString(expression, {
        locale,
        use24HourTimeFormat: true,
        dayOfWeekStartIndexZero: !expression.includes('?'),
        throwExceptionOnParseError: true,
      });
      return { text, fromServer: false };
    } catch {
      // cronstrue reads fewer forms than the API: say it as the API does.
    }
  }
  return english ? { text: english, fromServer: true } : null;
}
