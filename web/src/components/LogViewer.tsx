// The log of one attempt: windowed (only the visible lines are in the DOM,
// so 100,000 lines scroll smoothly), followed live from the log stream
// while the attempt runs, searchable, copyable and downloadable.

import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { useVirtualizer } from '@tanstack/react-virtual';
import { errorMessage } from '../api/client';
import { getLog, logStreamUrl, logUrl } from '../api/endpoints';
import { useDebounced } from '../lib/hooks';
import { highlight, lineText, LogBuffer } from '../lib/logModel';
import { logTimeZone } from '../lib/logZone';
import { useTimeZone } from '../lib/timeZone';

const LINE_H = 18;

/** A LogBuffer React can watch: changes are announced at most once a frame. */
class WatchedLog extends LogBuffer {
  private listeners = new Set<() => void>();
  private frame = 0;
  subscribe = (fn: () => void) => {
    this.listeners.add(fn);
    return () => {
      this.listeners.delete(fn);
    };
  };
  snapshot = () => this.version;
  announce(): void {
    if (this.frame) return;
    this.frame = window.requestAnimationFrame(() => {
      this.frame = 0;
      for (const fn of this.listeners) fn();
    });
  }
}

type Phase =
  | { kind: 'loading' }
  | { kind: 'live' }
  | { kind: 'stored'; source: string }
  | { kind: 'error'; error: unknown };

export function LogViewer({
  taskInstanceId,
  attempt,
  running,
  onEnded,
}: {
  taskInstanceId: number;
  attempt: number;
  /** The attempt is still running: follow its live stream. */
  running: boolean;
  /** The live stream said the attempt ended. */
  onEnded?: () => void;
}) {
  const { t } = useTranslation('task');
  const [log] = useState(() => new WatchedLog());
  const version = useSyncExternalStore(log.subscribe, log.snapshot);
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' });
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState('');
  const [matchAt, setMatchAt] = useState(0);
  const [copied, setCopied] = useState(false);
  const [streamed, setStreamed] = useState(running);
  const scroller = useRef<HTMLDivElement>(null);
  const programmatic = useRef(false);
  const onEndedRef = useRef(onEnded);
  useEffect(() => {
    onEndedRef.current = onEnded;
  }, [onEnded]);

  // Load the stored log, or follow the live one and load the stored log
  // when it ends.
  useEffect(() => {
    const controller = new AbortController();
    let source: EventSource | null = null;
    log.clear();
    log.announce();
    const loadStored = () => {
      getLog(taskInstanceId, attempt, { signal: controller.signal }).then(
        ({ text, headers }) => {
          log.setText(text);
          log.announce();
          setPhase({ kind: 'stored', source: headers.get('x-datajump-log-source') ?? 'full' });
        },
        (error: unknown) => {
          if (!controller.signal.aborted) setPhase({ kind: 'error', error });
        },
      );
    };
    if (running && typeof EventSource !== 'undefined') {
      const es = new EventSource(logStreamUrl(taskInstanceId, attempt));
      source = es;
      es.onopen = () => setPhase({ kind: 'live' });
      es.addEventListener('line', (e) => {
        const m = e as MessageEvent<string>;
        if (log.appendStreamed(Number(m.lastEventId), lineText(m.data))) log.announce();
      });
      es.addEventListener('end', () => {
        // `data` is { status }: the page refetches the attempt for it.
        es.close();
        setStreamed(false);
        onEndedRef.current?.();
        loadStored();
      });
      es.onerror = () => {
        // The stream is refused (the attempt ended, or no live log): read the stored one.
        if (es.readyState === EventSource.CLOSED) {
          es.close();
          loadStored();
        }
      };
    } else {
      loadStored();
    }
    return () => {
      controller.abort();
      source?.close();
    };
    // `running` only chooses how to start; a change of attempt starts over.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [log, taskInstanceId, attempt]);

  const entries = log.entries;
  // eslint-disable-next-line react-hooks/incompatible-library -- the virtualizer's functions are read during render on purpose
  const rows = useVirtualizer({
    count: entries.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => LINE_H,
    overscan: 30,
  });

  const q = useDebounced(query, 200);
  const matches = useMemo(() => log.search(q), [log, q, version]); // eslint-disable-line react-hooks/exhaustive-deps
  const current = matches.length ? Math.min(matchAt, matches.length - 1) : -1;

  // A new search shows its first match.
  const firstMatch = matches[0];
  useEffect(() => {
    if (firstMatch !== undefined) rows.scrollToIndex(firstMatch, { align: 'center' });
  }, [q, rows]); // eslint-disable-line react-hooks/exhaustive-deps

  const live = phase.kind === 'live' && streamed;
  // Follow the end while live.
  useEffect(() => {
    if (!live || !follow || entries.length === 0) return;
    programmatic.current = true;
    rows.scrollToIndex(entries.length - 1, { align: 'end' });
    const t = window.requestAnimationFrame(() => {
      programmatic.current = false;
    });
    return () => window.cancelAnimationFrame(t);
  }, [version, live, follow, entries.length, rows]);

  const goTo = (i: number) => {
    if (!matches.length) return;
    const n = (i + matches.length) % matches.length;
    setMatchAt(n);
    setFollow(false);
    rows.scrollToIndex(matches[n]!, { align: 'center' });
  };

  const onScroll = () => {
    const el = scroller.current;
    if (!el || programmatic.current || !live) return;
    const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - LINE_H * 2;
    if (!atBottom && follow) setFollow(false);
  };

  // The runner writes times in the run's zone: say so where the page shows another.
  const chosenZone = useTimeZone();
  const logZone = useMemo(() => logTimeZone(log.entries), [log, version]); // eslint-disable-line react-hooks/exhaustive-deps
  const otherZone = logZone !== null && logZone !== chosenZone ? logZone : null;

  const matchSet = useMemo(() => new Set(matches), [matches]);
  const currentEntry = current >= 0 ? matches[current] : -1;
  const downloadName = `task-${taskInstanceId}-attempt-${attempt}.log`;
  const phaseLabel =
    phase.kind === 'loading'
      ? t('log.phase.loading')
      : live
        ? t('log.phase.live')
        : phase.kind === 'stored'
          ? phase.source === 'full' || phase.source === 'tail'
            ? t(`log.phase.${phase.source}`)
            : t('log.phase.other', { source: phase.source })
          : t('log.phase.error');

  return (
    <div className="logview">
      <div className="log-toolbar">
        <span className={`tag ${live ? 'tag-live' : 'tag-muted'}`}>{phaseLabel}</span>
        <span className="muted small">{t('log.lines', { n: entries.length.toLocaleString() })}</span>
        {otherZone && (
          <span className="tag tag-warn" title={t('log.zoneTitle', { zone: otherZone, chosen: chosenZone })} data-testid="log-zone">
            <Trans t={t} i18nKey="log.zone" values={{ zone: otherZone }} components={{ zone: <span translate="no" /> }} />
          </span>
        )}
        <div className="log-search">
          <input
            type="search"
            className="input input-sm mono"
            placeholder={t('log.searchPlaceholder')}
            value={query}
            onChange={(e) => {
              setQuery(e.target.value);
              setMatchAt(0);
              if (e.target.value) setFollow(false);
            }}
            onKeyDown={(e) => {
              if (e.key === 'Enter') goTo(e.shiftKey ? current - 1 : current + 1);
            }}
            data-testid="log-search"
          />
          {q && (
            <span className="small muted" data-testid="log-matches">
              {matches.length ? `${current + 1}/${matches.length}` : t('log.noMatch')}
            </span>
          )}
          <button type="button" className="btn btn-sm" disabled={!matches.length} onClick={() => goTo(current - 1)} aria-label={t('log.previousMatch')}>
            ↑
          </button>
          <button type="button" className="btn btn-sm" disabled={!matches.length} onClick={() => goTo(current + 1)} aria-label={t('log.nextMatch')}>
            ↓
          </button>
        </div>
        <div className="spacer" />
        {live && (
          <label className="check small">
            <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} data-testid="log-follow" />
            {t('log.follow')}
          </label>
        )}
        <button
          type="button"
          className="btn btn-sm"
          disabled={entries.length === 0}
          onClick={() => {
            void navigator.clipboard?.writeText(log.text()).then(() => {
              setCopied(true);
              window.setTimeout(() => setCopied(false), 1500);
            });
          }}
          data-testid="log-copy"
        >
          {copied ? t('log.copied') : t('log.copy')}
        </button>
        <a className="btn btn-sm" href={logUrl(taskInstanceId, attempt)} download={downloadName} data-testid="log-download">
          {t('log.download')}
        </a>
      </div>
      {log.earlierNotShown > 0 && (
        <div className="log-note" data-testid="log-earlier">
          {t(live ? 'log.earlierLive' : 'log.earlierStored', { n: log.earlierNotShown.toLocaleString() })}
        </div>
      )}
      {phase.kind === 'error' && <div className="inline-error">{errorMessage(phase.error)}</div>}
      <div className="log-scroll" ref={scroller} onScroll={onScroll} data-testid="log-view">
        <div style={{ height: rows.getTotalSize(), position: 'relative', minWidth: '100%' }}>
          {rows.getVirtualItems().map((row) => {
            const entry = entries[row.index]!;
            const style = { transform: `translateY(${row.start}px)`, height: LINE_H };
            if (entry.kind === 'gap') {
              return (
                <div key={row.key} className="log-line log-gap" style={style} data-testid="log-line">
                  <span className="log-no">…</span>
                  <span className="log-text">{t('log.gap', { from: entry.from, to: entry.to })}</span>
                </div>
              );
            }
            const hit = matchSet.has(row.index);
            return (
              <div
                key={row.key}
                className={`log-line${hit ? ' log-hit' : ''}${row.index === currentEntry ? ' log-current' : ''}`}
                style={style}
                data-testid="log-line"
                data-line={entry.no}
                translate="no"
              >
                <span className="log-no">{entry.no}</span>
                <span className="log-text">
                  {hit
                    ? highlight(entry.text, q).map((part, i) => (part.match ? <mark key={i}>{part.text}</mark> : part.text))
                    : entry.text}
                </span>
              </div>
            );
          })}
        </div>
        {entries.length === 0 && phase.kind !== 'loading' && (
          <div className="log-empty muted">{live ? t('log.waiting') : t('log.noOutput')}</div>
        )}
      </div>
    </div>
  );
}
