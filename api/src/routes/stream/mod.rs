//! Server-push routes (Server-Sent Events): `/api/v1/stream`, what changes
//! in runs and task instances ([`crate::live`]), and
//! `/api/v1/dags/task-instances/{taskInstanceId}/log/stream`, a running
//! attempt's log lines as the runner prints them.
//!
//! Both end when the API shuts down, so a graceful shutdown never waits on
//! an open page; a browser's `EventSource` reconnects by itself.

use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use datajump_shared::TaskStatus;
use datajump_shared::logs::{SEQ_HEADER, dropped_lines};
use futures::{Stream, StreamExt};
use tokio::sync::{broadcast, mpsc};
use tracing::debug;

use self::dto::LogEnd;
use super::shared::{CallerOf, attempt_of, find_task_instance};
use crate::AppState;
use crate::dto::LogQuery;
use crate::error::{Error, Result};
use crate::extract::{Path, Query};
use crate::live::{Change, Subject};

pub mod dto;

/// How long the runner has to answer for its in-memory tail.
const RUNNER_TAIL_WAIT: Duration = Duration::from_secs(2);

/// An SSE answer of `events`, kept alive through proxies, ending with the
/// API.
fn sse(state: &AppState, events: impl Stream<Item = Event> + Send + 'static) -> Response {
    let events = events
        .take_until(state.live.shutdown().clone().cancelled_owned())
        .map(Ok::<_, Infallible>);
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    // Proxies such as nginx would otherwise hold events back in a buffer.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    // Events carry what tasks print: never sniffed into HTML or script
    // (docs/SECURITY.md, "The API and browsers").
    response.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `GET /api/v1/stream`: every change to runs and task instances the
/// caller may see, as `event: task` ([`dto::TaskChange`]) and
/// `event: run` ([`dto::RunChange`]); first `event: ready`, and
/// `event: resync` when this stream fell behind and the page should reload
/// what it shows.
pub async fn changes(
    State(state): State<AppState>,
    Extension(CallerOf(caller)): Extension<CallerOf>,
) -> Result<Response> {
    let reach = crate::reach::caller(caller)?.reach;
    let receiver = state.live.subscribe();
    let changes = futures::stream::unfold(receiver, move |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(change) if change.visible_to(reach) => {
                    return Some((
                        Event::default().event(change.event).data(&change.data),
                        receiver,
                    ));
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let event = Event::default().event("resync").data(missed.to_string());
                    return Some((event, receiver));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let ready = futures::stream::once(async { Event::default().event("ready").data("{}") });
    Ok(sse(&state, ready.chain(changes)))
}

/// A log line as an event: its number is the event's id, its text the data
/// as a JSON string. A terminal shows
/// what follows a line's last carriage return (progress bars redraw that
/// way), and SSE cannot carry one.
fn line_event(number: u64, line: &str) -> Event {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let shown = line.rsplit('\r').next().unwrap_or(line);
    let event = Event::default().event("line").id(number.to_string());
    // As a JSON string: SSE drops an event whose data is empty, and a blank
    // line is still a line.
    event.json_data(shown).unwrap_or_else(|_| {
        Event::default()
            .event("line")
            .id(number.to_string())
            .data("\"\"")
    })
}

/// Whether `change` says the attempt numbered `attempt` of task instance
/// `id` is no longer running.
fn ends_attempt(change: &Change, id: i64, attempt: i32) -> Option<TaskStatus> {
    match change.subject {
        Subject::Task {
            id: changed,
            status,
            attempts,
        } if changed == id && (status != TaskStatus::Running || attempts != attempt + 1) => {
            Some(status)
        }
        _ => None,
    }
}

/// `GET /api/v1/dags/task-instances/{taskInstanceId}/log/stream`: the log
/// of attempt `attempt` (the latest when left out) as it is written: `event:
/// line` per line (its text as a JSON string, its number as the event id, from the runner's in-memory
/// tail on, so a page opened late still sees the last lines), then `event:
/// end` `{status, attempt}` once the attempt ended, when its full log is
/// `GET …/log`. An attempt that ended already gets `end` at once.
pub async fn log(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Query(query): Query<LogQuery>,
) -> Result<Response> {
    let instance = find_task_instance(&state, id).await?;
    let exec = attempt_of(&state, &instance, query.attempt).await?;
    let names = state.bus.names().clone();
    // Subscribed before the attempt is read again, so neither its lines
    // nor its end can fall between the read and the subscriptions.
    let mut changes = state.live.subscribe();
    let mut lines = state
        .nats
        .subscribe(names.log(exec.id))
        .await
        .map_err(|e| Error::Nats(e.to_string()))?;
    let exec = attempt_of(&state, &instance, Some(exec.attempt)).await?;
    let (sender, receiver) = mpsc::channel::<Event>(256);
    let end = move |status: TaskStatus| {
        let end = LogEnd {
            status,
            attempt: exec.attempt,
        };
        Event::default()
            .event("end")
            .json_data(end)
            .unwrap_or_else(|_| Event::default().event("end").data("{}"))
    };
    if exec.end_time.is_some() {
        let _ = sender.try_send(end(exec.status));
    } else {
        let nats = state.nats.clone();
        let shutdown = state.live.shutdown().clone();
        tokio::spawn(async move {
            let mut last_of_tail = 0;
            let tail = tokio::time::timeout(
                RUNNER_TAIL_WAIT,
                nats.request(names.log_tail_request(exec.id), Vec::new().into()),
            )
            .await;
            if let Ok(Ok(reply)) = tail {
                let text = String::from_utf8_lossy(&reply.payload);
                let first = dropped_lines(&text) + 1;
                for (number, line) in (first..).zip(text.lines().skip(usize::from(first > 1))) {
                    if sender.send(line_event(number, line)).await.is_err() {
                        return;
                    }
                    last_of_tail = number;
                }
            }
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = sender.closed() => return,
                    message = lines.next() => {
                        let Some(message) = message else { return };
                        let number = message
                            .headers
                            .as_ref()
                            .and_then(|h| h.get(SEQ_HEADER))
                            .and_then(|v| v.as_str().parse::<u64>().ok());
                        let Some(number) = number.filter(|&n| n > last_of_tail) else {
                            continue;
                        };
                        let line = String::from_utf8_lossy(&message.payload);
                        if sender.send(line_event(number, &line)).await.is_err() {
                            return;
                        }
                    }
                    change = changes.recv() => match change {
                        Ok(change) => {
                            if let Some(status) = ends_attempt(&change, id, exec.attempt) {
                                let _ = sender.send(end(status)).await;
                                return;
                            }
                        }
                        // Missed changes may include the end: the page
                        // reloads the log, which is then whole.
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            debug!(task_instance_id = id, "log stream fell behind the live changes");
                            let _ = sender.send(Event::default().event("resync").data("{}")).await;
                            return;
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            }
        });
    }
    let events = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    });
    Ok(sse(&state, events))
}
