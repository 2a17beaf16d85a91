// The one function every HTTP call of the UI goes through: same-origin
// fetch with the session cookie, JSON bodies declared as JSON (the API
// refuses a body without it), errors turned into `ApiError`, and a 401
// sending the browser to the sign-in page.

import i18next from 'i18next';
import { sayProblem } from '../lib/problem';
import type { ErrorBody, Problem } from './types';

export const API = '/api/v1';

/**
 * A failed request: the API's `{ error, message, details }` with its
 * status, and the stable codes and values of the problem and of each
 * detail when they have them.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: string[];
  readonly problem: Problem | null;
  /** The code and values of each of `details`, where it has them. */
  readonly detailProblems: (Problem | null)[];

  constructor(
    status: number,
    code: string,
    message: string,
    details: string[] = [],
    problem: Problem | null = null,
    detailProblems: (Problem | null)[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.problem = problem;
    this.detailProblems = detailProblems;
  }

  /** `details`, each in the reader's words where its code is known. */
  saidDetails(): string[] {
    return this.details.map((english, i) => sayProblem(this.detailProblems[i], english));
  }
}

/** Whether `e` is the API saying the thing does not exist. */
export function isNotFound(e: unknown): boolean {
  return e instanceof ApiError && e.status === 404;
}

/** What to do when the API answers 401 (set by the app, inside its router). */
let unauthorized: (() => void) | null = null;

/** Sets the handler of 401 answers; returns a function restoring none. */
export function onUnauthorized(handler: () => void): () => void {
  unauthorized = handler;
  return () => {
    if (unauthorized === handler) unauthorized = null;
  };
}

/** The sign-in page's address coming back to where the browser is now. */
export function signInPath(): string {
  const here = window.location.pathname + window.location.search;
  if (window.location.pathname.startsWith('/signin')) return '/signin';
  return `/signin?next=${encodeURIComponent(here)}`;
}

export function goToSignIn(): void {
  if (unauthorized) {
    unauthorized();
  } else if (!window.location.pathname.startsWith('/signin')) {
    window.location.assign(signInPath());
  }
}

type QueryValue = string | number | boolean | null | undefined;

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  query?: Record<string, QueryValue>;
  /** A JSON body; `undefined` sends none. */
  body?: unknown;
  signal?: AbortSignal;
  /** Don't redirect to sign-in on 401 (the session probe, sign-in itself). */
  noAuthRedirect?: boolean;
}

/** `path` (under `/api/v1`) with `query`'s set values. */
export function apiUrl(path: string, query?: Record<string, QueryValue>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const qs = params.toString();
  return `${API}${path}${qs ? `?${qs}` : ''}`;
}

async function errorOf(response: Response): Promise<ApiError> {
  let body: Partial<ErrorBody> | null = null;
  const text = await response.text().catch(() => '');
  try {
    body = text ? (JSON.parse(text) as Partial<ErrorBody>) : null;
  } catch {
    body = null;
  }
  const message =
    body?.message ??
    (text && text.length < 300
      ? text
      : response.statusText
        ? `${response.status} ${response.statusText}`
        : i18next.t('common:errors.httpStatus', { status: response.status }));
  return new ApiError(
    response.status,
    body?.error ?? `HTTP_${response.status}`,
    message,
    Array.isArray(body?.details) ? body.details : [],
    typeof body?.code === 'string' ? { code: body.code, params: body.params ?? {} } : null,
    Array.isArray(body?.detailProblems) ? body.detailProblems : [],
  );
}

async function send(path: string, options: RequestOptions): Promise<Response> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json' };
  let body: string | undefined;
  if (method !== 'GET') {
    // Every change says JSON, with a body or without one.
    headers['Content-Type'] = 'application/json';
    if (options.body !== undefined) body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(apiUrl(path, options.query), {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NETWORK', i18next.t('common:errors.network'));
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && !options.noAuthRedirect) goToSignIn();
    throw error;
  }
  return response;
}

/** A JSON answer (or `undefined` for 204). */
export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const response = await send(path, options);
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  if (!text) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(response.status, 'BAD_ANSWER', i18next.t('common:errors.notJson'));
  }
}

/** A text answer with its headers (logs). */
export async function requestText(
  path: string,
  options: RequestOptions = {},
): Promise<{ text: string; headers: Headers }> {
  const response = await send(path, { ...options, method: 'GET' });
  return { text: await response.text(), headers: response.headers };
}

/** The UI's own messages, by code, in the language in force when they are shown. */
const LOCAL_MESSAGES = {
  NETWORK: 'common:errors.network',
  BAD_ANSWER: 'common:errors.notJson',
} as const;

/** A human sentence for any error a request may throw. */
export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.code === 'NETWORK' || e.code === 'BAD_ANSWER') return i18next.t(LOCAL_MESSAGES[e.code]);
    return sayProblem(e.problem, e.message);
  }
  if (e instanceof Error) return e.message;
  return String(e);
}
