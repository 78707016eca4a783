//! The connection pool on its own: idle connections are capped per host and
//! reused newest first, the socket budget makes a connect wait (or close an
//! idle connection to another host) instead of failing, and a connection
//! released while fetches wait goes to the first of them.

use std::time::Duration;

use anyhow::Context;

use lesson4_asyncio_style::connection_pool::{Connection, ConnectionPool, Grant};
use lesson4_asyncio_style::event_loop::{get_running_loop, run};
use lesson4_asyncio_style::sleep::sleep;
use lesson4_asyncio_style::wait_for::wait_for;
use shared::fixtures::bound::within;
use shared::fixtures::server::{Site, TestServer};
use shared::FailKind;
use url::Url;

/// What to look at when a test never ends (each is bounded by [`within`]).
const POOL_STUCK: &str = "a fetch waited for ever for a socket. acquire takes a free \
    slot when there is one (the line's try_take) and waits on a future of its own (join) \
    only when there is none; a slot given back (a connection closed, a permit dropped) goes \
    to the first waiter, and an idle connection to another host is closed to make room";

fn root(server: &TestServer) -> Url {
    Url::parse(&server.url("/")).unwrap()
}

/// What a fetch does: acquire, then connect — with `fresh`, never on an
/// idle connection (its slot is used for a new one, as a resend does).
async fn connect(pool: &ConnectionPool, url: &Url, fresh: bool) -> anyhow::Result<Connection> {
    let grant = match pool
        .acquire(url)
        .await
        .context("`acquire` must grant a slot or an idle connection for a host that answers")?
    {
        Grant::Reuse(connection) if fresh => Grant::Open(pool.reopen(*connection)),
        grant => grant,
    };
    pool.connect(url, grant).await.context(
        "`ConnectionPool::connect` must turn a grant into a connection to a server that listens",
    )
}

#[test]
fn idle_connections_are_capped_per_host_and_reused() {
    within(20, POOL_STUCK, || {
        let server = TestServer::start(Site::new().page("/", "x"));
        let url = root(&server);
        run(async move {
            let pool = ConnectionPool::new(2, 100);
            let mut a = connect(&pool, &url, false).await?;
            let b = connect(&pool, &url, false).await?;
            let c = connect(&pool, &url, false).await?;
            assert!(
                !a.reused(),
                "Connection::reused of a newly opened connection: true"
            );
            assert!(
                a.socket().is_connected()?,
                "Connection::socket of a connection the pool opened: not connected"
            );
            assert_eq!(
                pool.open_count(),
                3,
                "open_count after three connects: three sockets open"
            );
            for connection in [a, b, c] {
                pool.release(connection, true);
            }
            assert_eq!(
                pool.idle_count(),
                2,
                "idle_count after releasing three reusable connections with a cap \
                 of two per host: two kept idle, the third closed"
            );
            assert_eq!(
                pool.open_count(),
                2,
                "open_count after the third was closed past the cap"
            );

            let d = connect(&pool, &url, false).await?;
            assert!(
                d.reused(),
                "a connect to a host with idle connections opened a new one instead of reusing one"
            );
            assert_eq!(
                pool.idle_count(),
                1,
                "idle_count after one of the two idle connections was taken"
            );
            // A response that does not allow reuse closes the connection.
            pool.release(d, false);
            assert_eq!(
                pool.open_count(),
                1,
                "open_count after releasing a connection whose response does not \
                 allow reuse: it is closed, the idle one stays"
            );
            // `fresh` skips the idle one.
            let e = connect(&pool, &url, true).await?;
            assert!(
                !e.reused(),
                "a fresh connect (reopen) gave a reused connection"
            );
            assert_eq!(
                pool.opened_count(),
                4,
                "opened_count: three connects, then the fresh one"
            );
            pool.release(e, true);
            assert_eq!(
                pool.idle_count(),
                1,
                "idle_count after releasing the fresh connection for reuse (the one it \
                 replaced was closed by reopen)"
            );
            pool.close();
            assert_eq!(
                pool.idle_count(),
                0,
                "idle_count after close(): close must close the idle connections"
            );
            assert_eq!(
                pool.open_count(),
                0,
                "open_count after close(), with no connection in use: close must close the \
                 idle ones"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
        drop(server);
    });
}

#[test]
fn a_connect_waits_for_a_free_socket_when_the_budget_is_spent() {
    within(20, POOL_STUCK, || {
        let server = TestServer::start(Site::new().page("/", "x"));
        let url = root(&server);
        run(async move {
            let pool = ConnectionPool::new(10, 2);
            let a = connect(&pool, &url, true).await?;
            let _b = connect(&pool, &url, true).await?;
            let (pool2, url2) = (pool.clone(), url.clone());
            let third = get_running_loop()
                .create_task(async move { connect(&pool2, &url2, true).await.map(|c| c.reused()) });
            sleep(Duration::from_millis(50)).await?;
            assert!(!third.done(), "a third socket was opened over the budget");
            drop(a);
            assert_eq!(
                pool.open_count(),
                1,
                "open_count after dropping one of two connections: a dropped connection must \
                 count itself closed (`Connection`'s `Drop`)"
            );
            let reused = wait_for(third, Duration::from_secs(5)).await.context(
                "the third connect still waited 5 s after a connection was dropped: a dropped \
                 connection must give its slot back, to the first fetch waiting \
                 (`Connection`'s `Drop`)",
            )?;
            assert!(!reused, "the waiting fresh connect came back reused");
            assert_eq!(
                pool.opened_count(),
                3,
                "opened_count: two, then the third in the slot the dropped one gave back"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}

#[test]
fn an_idle_connection_to_another_host_makes_room() {
    within(20, POOL_STUCK, || {
        let first = TestServer::start(Site::new().page("/", "1"));
        let second = TestServer::start(Site::new().page("/", "2"));
        let (url1, url2) = (root(&first), root(&second));
        run(async move {
            let pool = ConnectionPool::new(10, 1);
            let a = connect(&pool, &url1, false).await?;
            pool.release(a, true);
            assert_eq!(
                pool.idle_count(),
                1,
                "idle_count after releasing a reusable connection with no fetch waiting"
            );
            // The budget (one socket) is held by an idle connection to the
            // first server: it is closed to connect to the second.
            let b = wait_for(
                Box::pin(connect(&pool, &url2, false)),
                Duration::from_secs(10),
            )
            .await
            .unwrap_or_else(|err| {
                panic!(
                    "the connect to the second host never got a socket ({err:#}), while the \
                     budget's one socket sat idle, connected to the first host: with no free \
                     slot, acquire must close an idle connection to any host \
                     (evict_one_idle) to make room before it waits, and the connection closed \
                     must give its slot back (`Connection`'s `Drop`)"
                )
            });
            assert!(!b.reused(), "a connect to the second host came back reused");
            assert_eq!(
                pool.idle_count(),
                0,
                "idle_count: the idle connection to the first host must be closed to make room"
            );
            assert_eq!(
                pool.open_count(),
                1,
                "open_count with a budget of one socket"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}

/// With one socket for two fetches, the second waits in `acquire`. When the
/// first releases its connection, it goes to the waiting fetch — reused for
/// the same host, closed and replaced for another — instead of sitting idle
/// where the waiting fetch would never look.
#[test]
fn a_released_connection_goes_to_a_waiting_fetch() {
    within(20, POOL_STUCK, || {
        let first = TestServer::start(Site::new().page("/", "1"));
        let second = TestServer::start(Site::new().page("/", "2"));
        let (url1, url2) = (root(&first), root(&second));
        run(async move {
            let pool = ConnectionPool::new(10, 1);
            for (other, reused) in [(url1.clone(), true), (url2.clone(), false)] {
                let held = connect(&pool, &url1, false).await?;
                let (pool2, other2) = (pool.clone(), other.clone());
                let waiting = get_running_loop().create_task(async move {
                    let connection = connect(&pool2, &other2, false).await?;
                    let reused = connection.reused();
                    pool2.release(connection, true);
                    Ok(reused)
                });
                sleep(Duration::from_millis(50)).await?;
                assert!(
                    !waiting.done(),
                    "a second socket was opened over the budget"
                );
                pool.release(held, true);
                assert_eq!(
                    pool.idle_count(),
                    0,
                    "idle_count after a release while a fetch waits for a socket: a \
                     connection released while a fetch waits goes to that fetch (the pool's \
                     `give`), never idle, where the waiting fetch would not look"
                );
                let got = wait_for(waiting, Duration::from_secs(10)).await?;
                assert_eq!(
                    got, reused,
                    "did the waiting fetch for {other} reuse the released connection? \
                     (reused for its own host; closed and replaced for another)"
                );
                assert_eq!(
                    pool.open_count(),
                    1,
                    "open_count with a budget of one socket"
                );
            }
            assert_eq!(
                pool.opened_count(),
                2,
                "opened_count: url1 once (then reused once), then url2 in url1's slot"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}

#[test]
fn https_and_closed_ports_are_fetch_errors() {
    within(20, POOL_STUCK, || {
        let closed = shared::fixtures::server::refused_addr();
        run(async move {
            // A budget of one socket: a slot a failed connect kept would
            // leave none.
            let pool = ConnectionPool::new(10, 1);
            let https = Url::parse("https://127.0.0.1/").unwrap();
            let err = connect(&pool, &https, false)
                .await
                .expect_err("it must be an error: https and closed ports are fetch errors");
            let err = shared::FetchError::from_anyhow(&err);
            assert_eq!(
                err.kind,
                FailKind::Unsupported,
                "the kind of a connect to an https URL"
            );

            let refused = Url::parse(&format!("http://{closed}/")).unwrap();
            let err = connect(&pool, &refused, false)
                .await
                .expect_err("it must be an error: https and closed ports are fetch errors");
            let err = shared::FetchError::from_anyhow(&err);
            assert_eq!(
                err.kind,
                FailKind::Connect,
                "the kind of a connect to a closed port"
            );
            assert!(
                err.message.contains("connection refused"),
                "a refused connect's message should say \"connection refused\": {}",
                err.message
            );
            assert_eq!(
                pool.open_count(),
                0,
                "open_count after two failed connects: none opened"
            );
            assert_eq!(
                pool.taken_count(),
                0,
                "taken_count after two failed connects: a connect that fails must give its \
                 slot back, as its permit is dropped unused (`Permit`'s `Drop`)"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}

/// A listener that never accepts, with its accept queue full: the kernel
/// drops further handshakes, so a connect to it stays pending. Returns the
/// address and the connections that fill the queue (keep them open).
fn listener_that_leaves_connects_pending() -> (
    std::net::TcpListener,
    std::net::SocketAddr,
    Vec<std::net::TcpStream>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut filling = Vec::new();
    // The queue holds the listen backlog (128 with std) plus one; the
    // bound only stops a broken test.
    for _ in 0..10_000 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(stream) => filling.push(stream),
            Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                return (listener, addr, filling)
            }
            Err(err) => panic!("filling the accept queue: {err}"),
        }
    }
    panic!("the listener accepted 10,000 connections without accept()");
}

#[test]
fn a_connect_abandoned_by_its_deadline_gives_its_socket_back() {
    within(20, POOL_STUCK, || {
        let (_stalled, stalled_addr, _filling) = listener_that_leaves_connects_pending();
        let server = TestServer::start(Site::new().page("/", "x"));
        let (stalled, url) = (
            Url::parse(&format!("http://{stalled_addr}/")).unwrap(),
            root(&server),
        );
        run(async move {
            // A budget of one socket, spent on a connect that never finishes.
            let pool = ConnectionPool::new(10, 1);
            let abandoned = wait_for(
                Box::pin(connect(&pool, &stalled, true)),
                Duration::from_millis(100),
            )
            .await;
            assert!(abandoned.is_err(), "the connect to a full queue finished");
            // The deadline dropped that connect, and its permit came back: the
            // next connect does not wait for a socket that will never close.
            let connected = wait_for(Box::pin(connect(&pool, &url, true)), Duration::from_secs(5))
                .await
                .context(
                    "the connect after one abandoned by its deadline waited 5 s for the budget's \
                 one socket: the abandoned connect's permit, dropped unused, must give its slot \
                 back (`Permit`'s `Drop`)",
                )?;
            assert!(!connected.reused(), "a fresh connect came back reused");
            assert_eq!(
                pool.open_count(),
                1,
                "open_count: only the new connection (the abandoned connect opened none)"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}

/// A fetch cancelled while it waits for a socket leaves the line: the
/// connection released next is kept idle for the next fetch, not handed to
/// the cancelled one (which would drop it, closing a connection that could
/// have been reused), and the cancelled fetch no longer counts as waiting.
#[test]
fn a_fetch_cancelled_while_it_waits_for_a_socket_leaves_the_line() {
    within(20, POOL_STUCK, || {
        let server = TestServer::start(Site::new().page("/", "x"));
        let url = root(&server);
        run(async move {
            let pool = ConnectionPool::new(10, 1);
            let held = connect(&pool, &url, false).await?;
            let (pool2, url2) = (pool.clone(), url.clone());
            let waiting = get_running_loop()
                .create_task(async move { connect(&pool2, &url2, false).await.map(drop) });
            sleep(Duration::from_millis(20)).await?;
            assert_eq!(
                pool.waiting_count(),
                1,
                "one fetch waits for the one socket"
            );
            waiting.cancel();
            sleep(Duration::from_millis(20)).await?;
            assert!(waiting.cancelled(), "the waiting fetch was cancelled");
            assert_eq!(
                pool.waiting_count(),
                0,
                "a fetch cancelled while it waits for a socket still counts as waiting: it \
                 must leave the line, its waiter cancelled when its `acquire` is dropped \
                 (`LeaveLineOnDrop`'s `Drop`)"
            );
            pool.release(held, true);
            assert_eq!(
                pool.idle_count(),
                1,
                "the connection released after the waiting fetch was cancelled was not kept \
                 idle: it went to the cancelled fetch, which dropped it. `give` must pass a \
                 cancelled waiter by"
            );
            assert_eq!(
                pool.taken_count(),
                1,
                "the budget's one place is held by the idle connection, and only by it"
            );
            Ok(())
        })
        .expect("each step of the pool above must succeed against a server that answers");
    });
}
