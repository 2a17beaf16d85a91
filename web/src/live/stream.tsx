// The live stream: ONE EventSource on `/api/v1/stream` for the whole app,
// shared through this context. Pages subscribe to its `task` and `run`
// events to patch what they show, and to its reconnects to refetch once
// (events sent while it was down are lost).

import {
  createContext,
  use,
  useCallback,
  useEffect,
  useEffectEvent,
  useMemo,
  useRef,
  useState,
  type ReactNode,
} from 'react';
import { STREAM_URL } from '../api/endpoints';
import type { RunEvent, TaskEvent } from '../api/types';

export type StreamStatus = 'connecting' | 'live' | 'reconnecting' | 'down';

export interface StreamListener {
  onTask?: (event: TaskEvent) => void;
  onRun?: (event: RunEvent) => void;
  /** The stream is back after a break, or dropped changes: refetch what the page shows. */
  onReconnect?: () => void;
}

interface StreamContextValue {
  status: StreamStatus;
  subscribe: (listener: StreamListener) => () => void;
}

const StreamContext = createContext<StreamContextValue | null>(null);

function parse<T>(data: string): T | null {
  try {
    return JSON.parse(data) as T;
  } catch {
    return null;
  }
}

/** Longest wait before reopening a stream the browser gave up on. */
const MAX_BACKOFF_MS = 30_000;

export function StreamProvider({ children }: { children: ReactNode }) {
  const [status, setStatus] = useState<StreamStatus>('connecting');
  const listeners = useRef(new Set<StreamListener>());

  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let source: EventSource | null = null;
    let broken = false;
    let backoff = 1000;
    let timer: number | undefined;
    let stopped = false;
    const each = (fn: (l: StreamListener) => void) => {
      for (const l of [...listeners.current]) fn(l);
    };
    const open = () => {
      if (stopped) return;
      const es = new EventSource(STREAM_URL);
      source = es;
      es.onopen = () => {
        setStatus('live');
        backoff = 1000;
        if (broken) {
          broken = false;
          each((l) => l.onReconnect?.());
        }
      };
      es.onerror = () => {
        broken = true;
        if (es.readyState === EventSource.CLOSED) {
          // The browser gave up (an error answer): open again later.
          setStatus('down');
          es.close();
          timer = window.setTimeout(open, backoff);
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        } else {
          setStatus('reconnecting');
        }
      };
      es.addEventListener('task', (e) => {
        const event = parse<TaskEvent>((e as MessageEvent<string>).data);
        if (event) each((l) => l.onTask?.(event));
      });
      // The stream fell behind and dropped changes: pages reload.
      es.addEventListener('resync', () => each((l) => l.onReconnect?.()));
      es.addEventListener('run', (e) => {
        const event = parse<RunEvent>((e as MessageEvent<string>).data);
        if (event) each((l) => l.onRun?.(event));
      });
    };
    open();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      source?.close();
    };
  }, []);

  const subscribe = useCallback((listener: StreamListener) => {
    listeners.current.add(listener);
    return () => {
      listeners.current.delete(listener);
    };
  }, []);
  const value = useMemo<StreamContextValue>(() => ({ status, subscribe }), [status, subscribe]);
  return <StreamContext value={value}>{children}</StreamContext>;
}

export function useStreamStatus(): StreamStatus {
  return use(StreamContext)?.status ?? 'down';
}

/**
 * Subscribes the calling component to the stream for as long as it is
 * mounted; the handlers always see its latest props and state.
 */
export function useStream(handlers: StreamListener): void {
  const context = use(StreamContext);
  const onTask = useEffectEvent((e: TaskEvent) => handlers.onTask?.(e));
  const onRun = useEffectEvent((e: RunEvent) => handlers.onRun?.(e));
  const onReconnect = useEffectEvent(() => handlers.onReconnect?.());
  const subscribe = context?.subscribe;
  useEffect(() => {
    if (!subscribe) return;
    return subscribe({
      onTask: (e) => onTask(e),
      onRun: (e) => onRun(e),
      onReconnect: () => onReconnect(),
    });
  }, [subscribe]);
}
