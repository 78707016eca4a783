//! Tests of `src/socket.rs` and of the sub-coroutines of `src/fetch.rs` built
//! on it (`connect_any`, `read_all`): each operation tried first and awaited
//! only on `WouldBlock`, against real sockets on `127.0.0.1`. Each test is
//! bounded (see `shared::fixtures::bound`): a readiness future that nothing
//! resolves would otherwise leave the loop waiting for ever.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::fetch::{connect_any, read_all};
use lesson3_generators::socket::Socket;
use shared::fixtures::bound::{within, within_saying};
use shared::fixtures::server::refused_addr;
use shared::http::Limits;
use shared::{FailKind, FetchError};

/// What to look at when a socket operation waits for ever.
const NEVER_READY: &str = "a socket operation waited for a readiness that never came. \
    Socket::ready must install a reader (Direction::Read) or writer (Direction::Write) \
    with the loop whose callback resolves a fresh future; an operation must try first \
    and await ready(..) only after WouldBlock (mio's events are edge-triggered: an edge \
    that came before the wait is not sent again)";

#[test]
fn connect_gives_a_connected_socket_registered_with_the_loop() {
    within(10, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let task_loop = event_loop.clone();
        let (peer, registered) = event_loop
            .run_until_complete(async move {
                let sock = Socket::connect(&addr)
                    .await
                    .expect("`Socket::connect` must connect to a listening address");
                (sock.stream().peer_addr().ok(), task_loop.registered())
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            peer,
            Some(addr),
            "the peer of the socket Socket::connect returned: the listener it connected to"
        );
        assert_eq!(
            registered, 1,
            "sockets registered with the loop while the connected socket lived: \
             start_connect registers it"
        );
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered after the socket was dropped: a dropped socket must deregister \
             itself from the loop (`Socket`'s `Drop`)"
        );
    });
}

/// A connect that cannot finish for now: the listener's accept queue is
/// full (a backlog of 0 holds one connection, made first), so Linux drops
/// the next SYN and the connecting socket waits to send it again.
#[cfg(target_os = "linux")]
#[test]
fn is_connected_says_false_while_the_handshake_is_under_way() {
    use socket2::{Domain, Socket as RawSocket, Type};
    within(10, NEVER_READY, || {
        let listener = RawSocket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        listener
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        listener.listen(0).unwrap();
        let addr = listener.local_addr().unwrap().as_socket().unwrap();
        let _first = TcpStream::connect(addr).unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let connected = event_loop
            .run_until_complete(async move {
                let sock = Socket::start_connect(addr)
                    .expect("`Socket::start_connect` must start a connect to a listening address");
                sock.is_connected().map_err(|err| err.to_string())
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            connected,
            Ok(false),
            "is_connected of a socket whose handshake is still under way: Ok(false), \
             a readiness that came too early (peer_addr fails with ENOTCONN, which \
             still_connecting recognises), not an error"
        );
    });
}

#[test]
fn write_all_writes_more_than_the_socket_buffers_hold_in_parts() {
    // 16 MiB do not fit in loopback's buffers: a write must answer
    // `WouldBlock`, and write_all must wait for room and carry on.
    within(30, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            thread::sleep(Duration::from_millis(50));
            let mut got = Vec::new();
            conn.read_to_end(&mut got).unwrap();
            got
        });
        let data: Vec<u8> = (0..16 << 20).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        event_loop
            .run_until_complete(async move {
                let mut sock = Socket::connect(&addr)
                    .await
                    .expect("`Socket::connect` must connect to a listening address");
                sock.write_all(&sent)
                    .await
                    .expect("`write_all` must write every byte to a server that reads them all");
                // Dropped here: the server reads to the close.
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        let got = server.join().unwrap();
        assert_eq!(
            got.len(),
            data.len(),
            "bytes the server received of 16 MiB write_all sent: every byte, \
             however many writes it took"
        );
        assert!(
            got == data,
            "the server received the bytes in another order or changed: each write \
             must start where the last one stopped"
        );
    });
}

/// mio's events are edge-triggered: bytes that arrived while no reader was
/// installed were announced once, to no one, and nothing announces them
/// again. The server here writes at once and then sends nothing more; the
/// loop turns over (a sleep) after they are in, spending their edge; only
/// then is `read` called. It must try first and find them there.
#[test]
fn read_takes_bytes_that_arrived_before_it_was_called() {
    within(
        10,
        "`read` waited for bytes that were already in the socket: their edge came while \
         no reader was installed and will not come again. `read` must try `read_chunk` \
         first and await `ready(Direction::Read)` only after `WouldBlock`",
        || {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let (written, bytes_in) = std::sync::mpsc::channel();
            let server = thread::spawn(move || {
                let (mut conn, _) = listener.accept().unwrap();
                conn.write_all(b"hello").unwrap();
                let _ = written.send(());
                // Held open, silent, until the client closes it.
                let mut rest = Vec::new();
                let _ = conn.read_to_end(&mut rest);
            });
            let event_loop = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let task_loop = event_loop.clone();
            let got = event_loop
                .run_until_complete(async move {
                    let mut sock = Socket::connect(&addr)
                        .await
                        .expect("`Socket::connect` must connect to a listening address");
                    bytes_in.recv_timeout(Duration::from_secs(5)).unwrap();
                    // Turns of the loop with the bytes in (a pause of 50 ms
                    // on a timer): their edge is delivered, and no reader is
                    // installed to hear it.
                    let pause = task_loop.create_future::<()>();
                    let resume = pause.clone();
                    task_loop.call_later(Duration::from_millis(50), move || {
                        resume.set_result(());
                    });
                    pause.await;
                    sock.read()
                        .await
                        .expect("`read` must return the bytes the server sent")
                })
                .expect("`run_until_complete` must return Ok with what the coroutine returned");
            assert_eq!(
                got, b"hello",
                "what `read` returned: the bytes already in the socket"
            );
            server.join().unwrap();
        },
    );
}

#[test]
fn read_returns_what_arrived_in_chunks_then_empty_at_the_close() {
    // How far the reads got, for the message if they never end: stuck with
    // bytes still unread is a different mistake from stuck at the close.
    let read_so_far = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&read_so_far);
    let stuck = move || {
        let read = read_so_far.load(Ordering::SeqCst);
        if read < 100 * 1024 {
            format!(
                "`read` waited for bytes that were already in the socket: {read} of the \
                 100 KiB sent were read when it stopped. An edge comes once: `read` must try \
                 `read_chunk` first and await `ready(Direction::Read)` only after \
                 `WouldBlock`. Or else: {NEVER_READY}"
            )
        } else {
            "`read` never returned the empty chunk of the peer's close: a read of 0 bytes \
             (`Ok(0)`) is the end of the stream, not `WouldBlock`; `read` must return it at \
             once, not wait for a readiness that will not come again"
                .to_string()
        }
    };
    within_saying(10, stuck, move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            // 100 KiB, in pieces with pauses: the reader must wait between them.
            for piece in 0..5u8 {
                conn.write_all(&[b'a' + piece; 20 * 1024]).unwrap();
                thread::sleep(Duration::from_millis(10));
            }
        });
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let chunks = event_loop
            .run_until_complete(async move {
                let mut sock = Socket::connect(&addr)
                    .await
                    .expect("`Socket::connect` must connect to a listening address");
                let mut chunks = Vec::new();
                loop {
                    let chunk = sock
                        .read()
                        .await
                        .expect("`read` must return the bytes the server sent");
                    if chunk.is_empty() {
                        break chunks;
                    }
                    counted.fetch_add(chunk.len(), Ordering::SeqCst);
                    chunks.push(chunk);
                }
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        server.join().unwrap();
        let total: usize = chunks.iter().map(Vec::len).sum();
        assert_eq!(
            total,
            100 * 1024,
            "bytes read before read returned an empty chunk (the peer's close): all \
             100 KiB the server sent"
        );
        let biggest = chunks.iter().map(Vec::len).max().unwrap_or(0);
        assert!(
            biggest <= 16 * 1024,
            "read returned a chunk of {biggest} bytes: one read_chunk reads at most \
             16 KiB (READ_CHUNK) and returns exactly what it read"
        );
        let text: Vec<u8> = chunks.concat();
        assert!(
            text.windows(2).filter(|w| w[0] != w[1]).count() == 4,
            "the bytes read are out of order or changed: the five pieces were sent as \
             aaaa..., bbbb..., eeee..."
        );
    });
}

#[test]
fn read_all_parses_a_response_that_arrives_in_pieces() {
    within(10, NEVER_READY, || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            for piece in [
                "HTTP/1.0 200 OK\r\nContent-Le",
                "ngth: 11\r\n\r\nhello",
                " worl",
                "d",
            ] {
                conn.write_all(piece.as_bytes()).unwrap();
                thread::sleep(Duration::from_millis(10));
            }
            // Kept open: read_all must stop at the end of the body, not wait
            // for the close.
            thread::sleep(Duration::from_millis(500));
        });
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (status, body) = event_loop
            .run_until_complete(async move {
                let mut sock = Socket::connect(&addr)
                    .await
                    .expect("`Socket::connect` must connect to a listening address");
                let response = read_all(&mut sock, Limits::default())
                    .await
                    .expect("`read_all` must return the whole response the server sent");
                (response.status, response.body)
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        server.join().unwrap();
        assert_eq!(status, 200, "status of the response read_all returned");
        assert_eq!(
            body, b"hello world",
            "body of the response read_all returned: the 11 bytes Content-Length \
             announced, from three reads"
        );
    });
}

/// When [`resetting_server`] resets its one connection.
enum ResetWhen {
    /// Once the client's first bytes arrive: it is connected and writing.
    FirstBytes,
    /// 20 ms after the accept: the client is connected, and reading.
    After20Ms,
}

/// A server that takes one connection and closes it with a reset (RST),
/// not the usual FIN.
fn resetting_server(when: ResetWhen) -> (SocketAddr, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        match when {
            ResetWhen::FirstBytes => {
                let _ = conn.read(&mut [0u8; 4096]);
            }
            ResetWhen::After20Ms => thread::sleep(Duration::from_millis(20)),
        }
        socket2::SockRef::from(&conn)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(conn);
    });
    (addr, server)
}

#[test]
fn write_all_to_a_connection_the_peer_reset_ends_with_its_error() {
    within(
        10,
        "write_all never ended on a connection the peer had reset: only WouldBlock may \
         wait for the socket to be writable, and only Interrupted tries again at once; \
         any other error of a write is write_all's error",
        || {
            let (addr, server) = resetting_server(ResetWhen::FirstBytes);
            let event_loop = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let err = event_loop
                .run_until_complete(async move {
                    let mut sock = Socket::connect(&addr)
                        .await
                        .expect("`Socket::connect` must connect to a listening address");
                    // More than the socket buffers hold: a write after the
                    // reset fails.
                    let data = vec![b'x'; 16 << 20];
                    let err = sock.write_all(&data).await.expect_err("it must be an error: write all to a connection the peer reset ends with its error");
                    // A task's outcome is `Clone`; an `io::Error` is not.
                    (err.kind(), err.to_string())
                })
                .expect("`run_until_complete` must return Ok with what the coroutine returned");
            server.join().unwrap();
            assert!(
                matches!(
                    err.0,
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                ),
                "write_all's error on a connection the peer reset: ConnectionReset or \
                 BrokenPipe, the write's own error, got {err:?}"
            );
        },
    );
}

#[test]
fn read_all_reports_a_reset_with_the_reports_kind_and_wording() {
    within(10, NEVER_READY, || {
        let (addr, server) = resetting_server(ResetWhen::After20Ms);
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let err = event_loop
            .run_until_complete(async move {
                let mut sock = Socket::connect(&addr)
                    .await
                    .expect("`Socket::connect` must connect to a listening address");
                let err = read_all(&mut sock, Limits::default()).await.expect_err("it must be an error: read all reports a reset with the reports kind and wording");
                FetchError::from_anyhow(&err)
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        server.join().unwrap();
        assert_eq!(
            err.kind,
            FailKind::Reset,
            "kind of read_all's error on a connection reset: the report's fail_reset"
        );
        assert_eq!(
            err.message, "connection reset by peer",
            "read_all's error on a reset: io_error turns the io::Error into the report's \
             error, whose wording drops the \" (os error N)\" an io::Error prints"
        );
    });
}

#[test]
fn connect_any_skips_a_refused_address_for_the_next() {
    // As when `localhost` gives `::1` first and nothing listens there.
    let stuck = format!(
        "a connect to a refused address never ended: a failed connect makes the socket \
         writable once, and writable means the connect is over, not that it succeeded. \
         `is_connected` must read the socket's pending error (`take_error`) first, or the \
         refused connect looks like one still under way and is waited on for ever. Or \
         else: {NEVER_READY}"
    );
    within(10, &stuck, || {
        let closed = refused_addr();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let peer = event_loop
            .run_until_complete(async move {
                let sock = connect_any(&[closed, open])
                    .await
                    .expect("`connect_any` must connect to the first address that listens");
                sock.stream().peer_addr().ok()
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            peer,
            Some(open),
            "the peer of connect_any([refused, open]): the second address"
        );
        assert_eq!(
            event_loop.registered(),
            0,
            "sockets registered after connect_any's socket was dropped: the refused \
             attempt's socket is gone too"
        );

        // Every address refused: the error is the last one's, with its context.
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let (message, kind) = event_loop
            .run_until_complete(async move {
                let err = connect_any(&[closed]).await.expect_err(
                    "it must be an error: connect any skips a refused address for the next",
                );
                (format!("{err:#}"), FetchError::from_anyhow(&err).kind)
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            message,
            format!("connecting to {closed}: connection refused"),
            "connect_any's error when every address refused: the last address's, \
             with the context `connecting to ADDR` (connect_error gives the report's \
             wording)"
        );
        assert_eq!(
            kind,
            FailKind::Connect,
            "kind of a refused connect: the report's fail_connect (connect_error)"
        );
        drop(listener);
    });
}
