import { useTranslation } from 'react-i18next';
import { validateCron } from '../api/endpoints';
import { errorMessage } from '../api/client';
import { formatZoned } from '../lib/format';
import { sayProblem } from '../lib/problem';
import { describeCron } from '../lib/cronWords';
import { useAsync, useDebounced } from '../lib/hooks';

/**
 * What a cron expression means and when it fires next, checked by the API
 * as it is typed (debounced).
 */
export function CronPreview({ expression, timezone }: { expression: string; timezone?: string }) {
  const { t } = useTranslation('dag');
  const expr = useDebounced(expression.trim(), 300);
  const zone = useDebounced((timezone ?? '').trim(), 300);
  const check = useAsync(expr ? JSON.stringify([expr, zone]) : null, (signal) =>
    validateCron({ cronExpression: expr, timezone: zone || undefined, count: 5 }, { signal }),
  );
  if (!expr) return <div className="cron-preview muted small">{t('cron.hint')}</div>;
  const pending = check.loading || expr !== expression.trim();
  if (check.error) {
    return <div className="cron-preview inline-error">{errorMessage(check.error)}</div>;
  }
  const v = check.data;
  if (!v) return <div className="cron-preview muted small">{t('cron.checking')}</div>;
  return (
    <div className={`cron-preview${pending ? ' stale' : ''}`} data-testid="cron-preview">
      {v.valid ? (
        <>
          <CronDescription expression={expr} english={v.description} />
          {v.warning && (
            <div className="inline-warn" data-server-text>
              {v.warning}
            </div>
          )}
          {v.nextFireTimes && v.nextFireTimes.length > 0 && (
            <div className="small muted">
              {t('cron.next', { zone: v.timezone })}{' '}
              {v.nextFireTimes.map((time) => (
                <span key={time} className="mono fire" title={time} translate="no">
                  {formatZoned(time)}
                </span>
              ))}
            </div>
          )}
        </>
      ) : (
        <div className="inline-error" data-testid="cron-error">
          {sayProblem(v.problem, v.error ?? t('cron.invalid'))}
        </div>
      )}
    </div>
  );
}

function CronDescription({ expression, english }: { expression: string; english?: string | null }) {
  const { i18n } = useTranslation();
  const words = describeCron(expression, english, i18n.language);
  if (!words) return null;
  return (
    <div className="cron-desc" data-server-text={words.fromServer || undefined}>
      {words.text}
    </div>
  );
}
