//! Tests of `src/fetch.rs`, through its public API.

use std::rc::Rc;
use std::time::Duration;

use shared::fixtures::bound::within;
use shared::fixtures::server::{Route, Site, TestServer};
use shared::http::{Limits, Response};
use shared::log::{Level, Log};
use shared::{FailKind, FetchError};
use url::Url;

use lesson4_asyncio_style::connection_pool::ConnectionPool;
use lesson4_asyncio_style::event_loop::{get_running_loop, run};
use lesson4_asyncio_style::fetch::*;
use lesson4_asyncio_style::sleep::sleep;

/// What a test that never ends is told.
const STUCK: &str = "a fetch never ended: `fetch` awaits the pool's `acquire`, then `get` \
     under `wait_for` with the session's timeout; `exchange` reads until the parser has a \
     whole response (or the server closed)";

/// A session whose pool keeps two idle connections a host, with `timeout`.
fn session(timeout: Duration) -> Session {
    Session::new(
        ConnectionPool::new(2, 4),
        timeout,
        Limits::default(),
        "crawler-course",
        Log::capture(Level::Debug),
    )
}

/// Fetch each path of `server` in turn, one attempt each, on one session.
fn fetch_paths(
    server: &TestServer,
    paths: &[&str],
    timeout: Duration,
) -> (Rc<Session>, Vec<anyhow::Result<Response>>) {
    let session = Rc::new(session(timeout));
    let urls: Vec<Url> = paths
        .iter()
        .map(|path| Url::parse(&server.url(path)).expect("a fixture URL parses"))
        .collect();
    let on_loop = session.clone();
    let results = run(async move {
        let mut results = Vec::new();
        for url in &urls {
            results.push(fetch(&on_loop, url).await);
        }
        Ok(results)
    })
    .expect("`run` must return Ok once the fetches are done");
    (session, results)
}

#[test]
fn one_attempt_fetches_a_page_and_keeps_its_connection() {
    within(20, STUCK, || {
        let server = TestServer::start(
            Site::new()
                .page("/", r#"<a href="/a">a</a>"#)
                .page("/a", "second"),
        );
        let (session, results) = fetch_paths(&server, &["/", "/a"], Duration::from_secs(5));
        let bodies: Vec<String> = results
            .into_iter()
            .map(|result| match result {
                Ok(response) => {
                    assert_eq!(response.status, 200, "the fixture page's status");
                    String::from_utf8_lossy(&response.body).into_owned()
                }
                Err(err) => panic!("fetching a fixture page failed: {err:#}"),
            })
            .collect();
        assert_eq!(
            bodies,
            [r#"<a href="/a">a</a>"#, "second"],
            "each response's body, whole: `exchange` feeds the parser until it has \
             the response the Content-Length announced"
        );
        assert_eq!(
            server.connections(),
            1,
            "connections for two fetches of one host: the first response allowed \
             reuse, so `get` gives the connection back with `release(connection, \
             response.reusable)` and the second fetch gets it from the pool"
        );
        assert_eq!(
            (session.in_flight.now(), session.in_flight.peak()),
            (0, 1),
            "fetches in flight (now, peak) after two fetches one after the other: \
             each counts from its socket to the end of its attempt (`in_flight.start()`'s \
             guard), and is no longer counted once it ended"
        );
    });
}

#[test]
fn an_attempt_that_outlives_the_timeout_is_a_timeout_error() {
    within(20, STUCK, || {
        let server = TestServer::start(Site::new().route("/", Route::stall()));
        let (session, mut results) = fetch_paths(&server, &["/"], Duration::from_millis(300));
        let err = match results.remove(0) {
            Ok(response) => panic!(
                "a server that never answers gave status {}: the attempt must end at \
                 the session's timeout",
                response.status
            ),
            Err(err) => err,
        };
        let fetch_error = err
            .downcast_ref::<FetchError>()
            .cloned()
            .unwrap_or_else(|| {
                panic!("a timed-out attempt must end with a FetchError (`timed_out`), got: {err:#}")
            });
        assert_eq!(
            (
                fetch_error.kind,
                fetch_error.message.contains("timed out after 300ms")
            ),
            (FailKind::Timeout, true),
            "a timed-out attempt is a `timeout` FetchError saying `timed out after \
             300ms` (`timed_out(session.timeout)`), got {fetch_error:?}"
        );
        assert_eq!(
            session.in_flight.now(),
            0,
            "fetches in flight after the attempt ran out of time: the guard ends \
             the count however the attempt ends (`InFlightGuard`'s `Drop` takes the \
             fetch off the count)"
        );
    });
}

#[test]
fn a_stale_pooled_connection_is_resent_on_a_fresh_one() {
    within(20, STUCK, || {
        // The server drops the second request unanswered, on the connection
        // the first one left idle: to the fetch, that connection was closed
        // while it waited in the pool.
        let server = TestServer::start(
            Site::new()
                .page("/", "first")
                .route("/stale", Route::html("served").drop_first(1)),
        );
        let (_session, results) = fetch_paths(&server, &["/", "/stale"], Duration::from_secs(5));
        let statuses: Vec<Result<u16, String>> = results
            .into_iter()
            .map(|result| result.map(|r| r.status).map_err(|err| format!("{err:#}")))
            .collect();
        assert_eq!(
            statuses,
            [Ok(200), Ok(200)],
            "a reused connection that fails before one byte of the answer is stale, not \
             the URL's fault: `get` resends on a fresh connection (`reopen`) within the \
             same attempt"
        );
        assert_eq!(
            server.request_count("/stale"),
            2,
            "requests for /stale: the one on the stale connection, and one resend"
        );
    });
}

/// Only a reused connection can be stale: a new one that the server closes
/// unanswered is the URL's failure (the crawler's retry decides, as a try).
#[test]
fn a_new_connection_closed_unanswered_is_the_attempts_failure() {
    within(20, STUCK, || {
        let server = TestServer::start(Site::new().route("/", Route::html("late").drop_first(1)));
        let (_session, mut results) = fetch_paths(&server, &["/"], Duration::from_secs(5));
        let outcome = results
            .remove(0)
            .map(|response| response.status)
            .map_err(|err| format!("{err:#}"));
        assert_eq!(
            (server.request_count("/"), outcome.is_err()),
            (1, true),
            "(requests for /, whether the attempt failed) when the server closes a new \
             connection without answering; got {outcome:?}. Only a reused (pooled) \
             connection can be stale: `get` resends only when `connection.reused()`, and a \
             new connection's failure is the attempt's error"
        );
    });
}

/// Two attempts waiting for their server at once are both in flight, and
/// neither is once they ended.
#[test]
fn two_attempts_waiting_at_once_are_both_counted() {
    within(20, STUCK, || {
        let server = Rc::new(TestServer::start(Site::new().route("/", Route::stall())));
        let session = Rc::new(session(Duration::from_secs(10)));
        let url = Url::parse(&server.url("/")).expect("a fixture URL parses");
        let (on_loop, server_on_loop) = (session.clone(), server.clone());
        let (while_waiting, after) = run(async move {
            let event_loop = get_running_loop();
            let attempts: Vec<_> = (0..2)
                .map(|_| {
                    let (session, url) = (on_loop.clone(), url.clone());
                    event_loop.create_task(async move { fetch(&session, &url).await.map(|_| ()) })
                })
                .collect();
            // Until both requests have reached the server (bounded by `within`).
            while server_on_loop.request_count("/") < 2 {
                sleep(Duration::from_millis(2)).await?;
            }
            let while_waiting = (on_loop.in_flight.now(), on_loop.in_flight.peak());
            for attempt in attempts {
                attempt.cancel();
                let _ = attempt.await;
            }
            Ok((while_waiting, on_loop.in_flight.now()))
        })
        .expect("`run` must return Ok once the fetches are done");
        assert_eq!(
            while_waiting,
            (2, 2),
            "fetches in flight (now, peak) while two attempts wait for their server. \
             (0, 1) means each attempt stopped counting as soon as it started: the guard \
             that `in_flight.start()` returns must live until the attempt ends, bound to \
             a name (`let _counted = ...`), not `let _ = ...`, which drops it at once"
        );
        assert_eq!(
            after, 0,
            "fetches in flight after both attempts were cancelled: the guard ends the \
             count however the attempt ends"
        );
    });
}

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let session = Session::new(
        ConnectionPool::new(1, 1),
        Duration::from_secs(1),
        Limits::default(),
        "crawler-course",
        Log::capture(Level::Error),
    );
    {
        let _a = session.in_flight.start();
        let _b = session.in_flight.start();
    }
    let _c = session.in_flight.start();
    assert_eq!(
        session.in_flight.now(),
        1,
        "fetches in flight now: two started and ended, a third started"
    );
    assert_eq!(
        session.in_flight.peak(),
        2,
        "the most fetches in flight at once (the peak, not the total of three)"
    );
}

/// A fetch that fails gives back its place and never its connection: a
/// body over the limit (the server keeps the connection open, the rest of
/// the body still coming), then a page on the same host. The failed
/// connection must be closed, not kept idle, and the second fetch must
/// come on a new one.
#[test]
fn a_failed_exchange_closes_its_connection_and_gives_its_place_back() {
    within(20, STUCK, || {
        let server = TestServer::start(
            Site::new()
                .route(
                    "/big",
                    Route::body("text/html", vec![b'x'; 64 * 1024]).failing(),
                )
                .page("/next", "next"),
        );
        let session = Rc::new(Session::new(
            // One socket in all: a place not given back shows at once.
            ConnectionPool::new(2, 1),
            Duration::from_secs(5),
            Limits {
                max_body_bytes: 1024,
                ..Limits::default()
            },
            "crawler-course",
            Log::capture(Level::Debug),
        ));
        let big = Url::parse(&server.url("/big")).expect("a fixture URL parses");
        let next = Url::parse(&server.url("/next")).expect("a fixture URL parses");
        let on_loop = session.clone();
        let (failed, idle_after_failure, taken_after_failure, second) = run(async move {
            let failed = fetch(&on_loop, &big).await;
            let idle = on_loop.pool.idle_count();
            let taken = on_loop.pool.taken_count();
            let second = fetch(&on_loop, &next).await;
            Ok((failed, idle, taken, second))
        })
        .expect("`run` must return Ok once the fetches are done");
        let kind = failed.err().map(|err| FetchError::from_anyhow(&err).kind);
        assert_eq!(
            kind,
            Some(FailKind::TooLarge),
            "a body over the 1 KiB limit is a `too_large` failure"
        );
        assert_eq!(
            idle_after_failure, 0,
            "a fetch that failed (a body over the limit) put its connection back in the pool: \
             a connection is kept only after a complete response that allows it, never after \
             an error (its unread rest would be the next request's answer)"
        );
        assert_eq!(
            taken_after_failure, 0,
            "a fetch that failed (a body over the limit) did not give its place in the socket \
             budget back: with a budget of one, every later fetch would wait for ever"
        );
        match second {
            Ok(response) => assert_eq!(
                response.body, b"next",
                "the page after the failure, whole, on a connection of its own"
            ),
            Err(err) => panic!("the page after the failed fetch failed too: {err:#}"),
        }
        assert_eq!(
            server.requests_after_failure(),
            0,
            "a request came on the connection whose answer was too large: a connection goes \
             back to the pool only after a complete response, never after an error"
        );
    });
}
