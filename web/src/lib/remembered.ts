// A choice the user makes once and this browser keeps (language, time zone,
// theme): read at start, written when it changes, and watched by the
// components that draw with it.

import { useSyncExternalStore } from 'react';

/** A remembered choice: `T` itself, or `null` for "not chosen". */
export interface Remembered<T> {
  /** The choice now, `null` when the user has made none. */
  get(): T | null;
  /** Makes `value` the choice (`null` forgets it) and tells every watcher. */
  set(value: T | null): void;
  /** The choice, re-rendering the caller when it changes. */
  use(): T | null;
}

/**
 * The choice stored under `key`, kept only if `accept` recognises it. A
 * browser that keeps nothing (private modes, blocked storage) still holds
 * the choice for this visit.
 */
export function remembered<T extends string>(key: string, accept: (value: string) => value is T): Remembered<T> {
  const listeners = new Set<() => void>();
  let value: T | null = null;
  try {
    const stored = localStorage.getItem(key);
    value = stored !== null && accept(stored) ? stored : null;
  } catch {
    value = null;
  }
  const subscribe = (listener: () => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };
  const get = () => value;
  return {
    get,
    set(next) {
      value = next;
      try {
        if (next === null) localStorage.removeItem(key);
        else localStorage.setItem(key, next);
      } catch {
        // Kept for this visit only.
      }
      listeners.forEach((listener) => listener());
    },
    use: () => useSyncExternalStore(subscribe, get),
  };
}
