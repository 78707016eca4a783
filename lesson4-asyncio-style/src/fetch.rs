//! # Fetching one URL: one attempt, on a pooled connection, with a deadline
//!
//! In lesson 3, `fetch` was a coroutine that connected, sent an HTTP/1.0
//! request, read until the server closed, and parsed. Lesson 4's `fetch` is
//! one *attempt* of the original crawler's `session.get(url,
//! allow_redirects=False)`:
//!
//! - the connection comes from the [`ConnectionPool`] (reused, or new: the
//!   pool resolves the host once per crawl and tries each address in order);
//! - the request is HTTP/1.1, and reading stops when the parser says the
//!   response is complete — the connection stays open for the next request;
//! - a *stale* pooled connection — one the server closed while it was idle,
//!   which fails before any byte of the response arrives — is not this URL's
//!   fault: the request is resent on a fresh connection, within the same
//!   attempt;
//! - `wait_for` puts the `--timeout` deadline around all of it.
//!
//! Retries, redirects and links are the crawler's business
//! ([`crate::crawler`]), as in the original.

use std::pin::pin;
use std::time::Duration;

use anyhow::Context;
use shared::http::{get_request, Limits, Response, ResponseParser, Version};
use shared::log::Log;
use shared::{FailKind, FetchError};
use url::Url;

use crate::connection_pool::{Connection, ConnectionPool};
use crate::future::is_cancelled;
use crate::wait_for::{wait_for, TimeoutError};

// ANCHOR: fetch
/// One attempt at `url`, within `timeout`. The error is a [`FetchError`]
/// (its kind is the report's `fail_<kind>`), or a cancellation of the task.
pub async fn fetch(
    pool: &ConnectionPool,
    url: &Url,
    timeout: Duration,
    limits: Limits,
    log: &Log,
) -> anyhow::Result<Response> {
    match wait_for(pin!(get(pool, url, limits, log)), timeout).await {
        Ok(response) => Ok(response),
        Err(err) if is_cancelled(&err) => Err(err),
        Err(err) if err.is::<TimeoutError>() => {
            Err(FetchError::new(FailKind::Timeout, err.to_string()).into())
        }
        Err(err) => Err(FetchError::from_anyhow(&err).into()),
    }
}
// ANCHOR_END: fetch

// ANCHOR: get
/// `GET url` on a pooled connection, resending once on a fresh connection
/// when a reused one turns out to be stale.
async fn get(
    pool: &ConnectionPool,
    url: &Url,
    limits: Limits,
    log: &Log,
) -> anyhow::Result<Response> {
    let request = get_request(url, Version::Http11KeepAlive);
    let mut fresh = false;
    loop {
        let mut connection = pool.connect(url, fresh).await?;
        let mut parser = ResponseParser::with_limits(limits);
        match exchange(&mut connection, &request, &mut parser).await {
            Ok(response) => {
                pool.release(connection, response.reusable);
                return Ok(response);
            }
            Err(err) if connection.reused() && !parser.received_any() && !is_cancelled(&err) => {
                log.debug(format!(
                    "{url}: pooled connection was closed ({err:#}), resending"
                ));
                fresh = true;
            }
            Err(err) => return Err(err),
        }
    }
}
// ANCHOR_END: get

// ANCHOR: exchange
/// Send the request, then feed the parser what arrives until it has a
/// complete response (or the server closes: then `finish` decides).
async fn exchange(
    connection: &mut Connection,
    request: &[u8],
    parser: &mut ResponseParser,
) -> anyhow::Result<Response> {
    let socket = connection.socket();
    socket.write_all(request).await.context("sending request")?;
    loop {
        let parsed = socket
            .read(|bytes| {
                if bytes.is_empty() {
                    parser.finish().map(Some)
                } else {
                    parser.feed(bytes)
                }
            })
            .await
            .context("reading response")?;
        if let Some(response) = parsed.context("reading response")? {
            return Ok(response);
        }
    }
}
// ANCHOR_END: exchange
