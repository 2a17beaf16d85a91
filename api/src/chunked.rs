//! A JSON answer written into chunks, for the answers that grow with a
//! whole DAG (a 3,000-task DAG's definition is 10 MB of JSON).
//!
//! axum's `Json` writes into one buffer that doubles as it grows: a 10 MB
//! answer holds a 16 MB buffer, and 24 MB while the last doubling copies
//! it, until the whole answer is sent. Written into 64 kB chunks, it holds
//! its own size, and each chunk is freed once sent.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::Error;

/// Bytes a chunk holds.
const CHUNK: usize = 64 * 1024;

/// `T` as a JSON answer (`200`, `application/json`, its length given),
/// the same bytes as axum's `Json` sends.
#[derive(Debug)]
pub struct ChunkedJson<T>(pub T);

/// The chunks written so far.
struct Chunks {
    full: Vec<Bytes>,
    current: Vec<u8>,
}

impl std::io::Write for Chunks {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            let room = CHUNK - self.current.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.current.extend_from_slice(now);
            if self.current.len() == CHUNK {
                let full = std::mem::replace(&mut self.current, Vec::with_capacity(CHUNK));
                self.full.push(Bytes::from(full));
            }
            rest = later;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<T: Serialize> IntoResponse for ChunkedJson<T> {
    fn into_response(self) -> Response {
        let mut chunks = Chunks {
            full: Vec::new(),
            current: Vec::with_capacity(CHUNK),
        };
        if let Err(e) = serde_json::to_writer(&mut chunks, &self.0) {
            return Error::Internal(e.to_string()).into_response();
        }
        let mut all = chunks.full;
        all.push(Bytes::from(chunks.current));
        let length: usize = all.iter().map(Bytes::len).sum();
        (
            [
                (CONTENT_TYPE, "application/json".to_owned()),
                (CONTENT_LENGTH, length.to_string()),
            ],
            Body::from_stream(futures::stream::iter(
                all.into_iter().map(Ok::<_, Infallible>),
            )),
        )
            .into_response()
    }
}
