// Small hooks the pages share: loading data, debouncing, the page's
// visibility and a ticking clock.

import { useCallback, useEffect, useEffectEvent, useState } from 'react';

export interface Async<T> {
  /** The data of the current key (kept while it reloads). */
  data: T | undefined;
  error: unknown;
  /** True until the current key's first answer, and while reloading. */
  loading: boolean;
  /** Fetches again, keeping the data shown until the answer. */
  reload: () => void;
  /** Patches the loaded data in place (stream events). */
  setData: (update: (data: T) => T) => void;
}

interface Loaded<T> {
  key: string | null;
  nonce: number;
  data: T | undefined;
  error: unknown;
}

/**
 * Runs `fetcher` whenever `key` changes (null: nothing to load) and on
 * `reload()`, aborting the previous request.
 */
export function useAsync<T>(key: string | null, fetcher: (signal: AbortSignal) => Promise<T>): Async<T> {
  const [nonce, setNonce] = useState(0);
  const [loaded, setLoaded] = useState<Loaded<T>>({
    key: null,
    nonce: -1,
    data: undefined,
    error: undefined,
  });
  const fetchNow = useEffectEvent((signal: AbortSignal) => fetcher(signal));
  useEffect(() => {
    if (key === null) return;
    const controller = new AbortController();
    fetchNow(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setLoaded({ key, nonce, data, error: undefined });
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setLoaded((prev) => ({
          key,
          nonce,
          // A failed reload keeps what was shown.
          data: prev.key === key ? prev.data : undefined,
          error,
        }));
      },
    );
    return () => controller.abort();
  }, [key, nonce]);
  const reload = useCallback(() => setNonce((n) => n + 1), []);
  const setData = useCallback(
    (update: (data: T) => T) =>
      setLoaded((prev) =>
        prev.key === key && prev.data !== undefined ? { ...prev, data: update(prev.data) } : prev,
      ),
    [key],
  );
  const current = loaded.key === key;
  return {
    data: current ? loaded.data : undefined,
    error: current ? loaded.error : undefined,
    loading: key !== null && (!current || loaded.nonce !== nonce),
    reload,
    setData,
  };
}

/** `value`, once it has stayed the same for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = window.setTimeout(() => setSettled(value), ms);
    return () => window.clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** Whether the page is visible (not a background tab). */
export function usePageVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState !== 'hidden');
  useEffect(() => {
    const update = () => setVisible(document.visibilityState !== 'hidden');
    document.addEventListener('visibilitychange', update);
    return () => document.removeEventListener('visibilitychange', update);
  }, []);
  return visible;
}

/** The time now, ticking every `ms` while `active`. */
export function useNow(ms = 1000, active = true): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(timer);
  }, [ms, active]);
  return now;
}

/** Calls `fn` every `ms` while `active` (not at once). */
export function useInterval(fn: () => void, ms: number, active = true): void {
  const tick = useEffectEvent(fn);
  useEffect(() => {
    if (!active) return;
    const timer = window.setInterval(() => tick(), ms);
    return () => window.clearInterval(timer);
  }, [ms, active]);
}
