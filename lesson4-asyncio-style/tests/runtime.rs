//! Tests of lesson 4's runtime, through its public API: the order callbacks
//! run in, timers on a test clock (no test sleeps), futures and tasks,
//! cancellation at an `.await`, the queue's `join`, `gather`, `wait_for`,
//! and the socket coroutines against a local listener.

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

use lesson4_asyncio_style::event_loop::{get_running_loop, EventLoop, TestClock};
use lesson4_asyncio_style::future::{is_cancelled, Cancelled, Future};
use lesson4_asyncio_style::gather::gather;
use lesson4_asyncio_style::queue::Queue;
use lesson4_asyncio_style::sleep::sleep;
use lesson4_asyncio_style::socket::Socket;
use lesson4_asyncio_style::wait_for::{wait_for, TimeoutError};
use shared::fixtures::server::refused_addr;

/// A loop on a test clock, and the clock.
fn test_loop() -> (EventLoop, Rc<TestClock>) {
    let clock = TestClock::new();
    let event_loop = EventLoop::with_clock(clock.clone()).unwrap();
    (event_loop, clock)
}

/// A log the callbacks of a test append to.
#[derive(Clone, Default)]
struct Trace(Rc<RefCell<Vec<String>>>);

impl Trace {
    fn push(&self, line: impl Into<String>) {
        self.0.borrow_mut().push(line.into());
    }
    fn lines(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

#[test]
fn call_soon_runs_in_order_and_new_callbacks_wait_for_the_next_turn() {
    let (event_loop, _clock) = test_loop();
    let trace = Trace::default();
    for name in ["a", "b", "c"] {
        let (trace, lp) = (trace.clone(), event_loop.clone());
        event_loop.call_soon(move || {
            trace.push(name);
            let trace = trace.clone();
            lp.call_soon(move || trace.push(format!("{name} again")));
        });
    }
    let cancelled = {
        let trace = trace.clone();
        event_loop.call_soon(move || trace.push("cancelled"))
    };
    cancelled.cancel();

    event_loop.run_once().unwrap();
    assert_eq!(trace.lines(), ["a", "b", "c"]);
    event_loop.run_once().unwrap();
    assert_eq!(
        trace.lines(),
        ["a", "b", "c", "a again", "b again", "c again"]
    );
    assert!(cancelled.cancelled());
    event_loop.close();
}

#[test]
fn timers_fire_in_deadline_order_on_the_test_clock() {
    let (event_loop, clock) = test_loop();
    let start = event_loop.time();
    let trace = Trace::default();
    for secs in [3, 1, 2, 5] {
        let (trace, lp) = (trace.clone(), event_loop.clone());
        let handle = event_loop.call_later(Duration::from_secs(secs), move || {
            trace.push(format!("{secs} at {:?}", lp.time() - start));
        });
        if secs == 5 {
            handle.cancel();
        }
    }
    // The cancelled timer is gone at once, not left to expire.
    assert_eq!(event_loop.pending_timers(), 3);
    let lp = event_loop.clone();
    event_loop.call_later(Duration::from_secs(4), move || lp.stop());
    event_loop.run_forever().unwrap();
    assert_eq!(trace.lines(), ["1 at 1s", "2 at 2s", "3 at 3s"]);
    assert_eq!(clock.now_since(start), Duration::from_secs(4));
    assert_eq!(event_loop.pending_timers(), 0);
    event_loop.close();
}

/// The test clock's time since `start` (a helper so the test reads well).
trait NowSince {
    fn now_since(&self, start: std::time::Instant) -> Duration;
}

impl NowSince for TestClock {
    fn now_since(&self, start: std::time::Instant) -> Duration {
        use lesson4_asyncio_style::event_loop::Clock;
        self.now() - start
    }
}

#[test]
fn a_timer_does_not_fire_before_its_deadline() {
    let (event_loop, clock) = test_loop();
    let fired = Rc::new(Cell::new(false));
    let flag = fired.clone();
    event_loop.call_later(Duration::from_secs(10), move || flag.set(true));
    // Something else to do keeps the loop from idling to the deadline.
    event_loop.call_soon(|| {});
    event_loop.run_once().unwrap();
    assert!(!fired.get());
    clock.advance(Duration::from_secs(9));
    event_loop.call_soon(|| {});
    event_loop.run_once().unwrap();
    assert!(!fired.get());
    clock.advance(Duration::from_secs(1));
    event_loop.call_soon(|| {});
    event_loop.run_once().unwrap();
    assert!(fired.get());
    event_loop.close();
}

#[test]
fn sleep_takes_loop_time_not_real_time() {
    let (event_loop, _clock) = test_loop();
    let start = event_loop.time();
    let lp = event_loop.clone();
    let slept = event_loop
        .run_until_complete(async move {
            sleep(Duration::from_secs(3600)).await?;
            Ok(lp.time() - start)
        })
        .unwrap();
    assert_eq!(slept, Duration::from_secs(3600));
    event_loop.close();
}

/// A future ends once — with a result, an error or a cancellation — and the
/// first of them wins. Polled before it ends, it keeps the waker and says
/// "not yet"; ending it wakes that waker; polled after, it hands over its
/// outcome.
#[test]
fn a_future_ends_once_with_a_result_an_error_or_a_cancellation() {
    let (event_loop, _clock) = test_loop();
    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = Waker::from(wakes.clone());
    let mut cx = std::task::Context::from_waker(&waker);

    let ok: Future<u32> = event_loop.create_future();
    let mut awaited = ok.clone();
    let first = std::future::Future::poll(std::pin::Pin::new(&mut awaited), &mut cx);
    assert!(first.is_pending(), "a pending future polled: {first:?}");
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
    assert!(ok.set_result(7));
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "set_result must wake the waker the poll left"
    );
    assert!(
        !ok.set_exception(anyhow::anyhow!("too late")),
        "the first outcome wins"
    );
    match std::future::Future::poll(std::pin::Pin::new(&mut awaited), &mut cx) {
        Poll::Ready(Ok(7)) => {}
        other => panic!("expected Ready(Ok(7)) once the result is set, got {other:?}"),
    }

    let failed: Future<u32> = event_loop.create_future();
    assert!(failed.set_exception(anyhow::anyhow!("it broke")));
    assert!(failed.done() && !failed.cancelled());
    assert!(!failed.cancel(), "a future that failed cannot be cancelled");
    let err = failed.take_result().expect("done").unwrap_err();
    assert_eq!(err.to_string(), "it broke");

    let cancelled: Future<u32> = event_loop.create_future();
    assert!(cancelled.cancel());
    assert!(cancelled.done() && cancelled.cancelled());
    assert!(
        !cancelled.set_result(1),
        "a cancelled future takes no result"
    );
    let err = cancelled.take_result().expect("done").unwrap_err();
    assert!(is_cancelled(&err), "{err:#}");
    event_loop.close();
}

#[test]
fn done_callbacks_are_scheduled_not_called() {
    let (event_loop, _clock) = test_loop();
    let trace = Trace::default();
    let future: Future<u32> = event_loop.create_future();
    let t = trace.clone();
    future.add_done_callback(move |f| {
        t.push(format!("done {:?}", f.take_result().map(|r| r.unwrap())))
    });
    assert!(future.set_result(7));
    trace.push("after set_result");
    // A second result is refused, and changes nothing.
    assert!(!future.set_result(8));
    assert!(!future.cancel());
    event_loop.run_once().unwrap();
    assert_eq!(trace.lines(), ["after set_result", "done Some(7)"]);

    // A callback added to a done future is scheduled too.
    let t = trace.clone();
    future.add_done_callback(move |f| t.push(format!("late {}", f.done())));
    assert_eq!(trace.lines().len(), 2);
    event_loop.run_once().unwrap();
    assert_eq!(trace.lines()[2], "late true");
    event_loop.close();
}

#[test]
fn a_task_is_a_future_with_its_coroutine_outcome() {
    let (event_loop, _clock) = test_loop();
    let answer = event_loop
        .run_until_complete(async {
            let lp = get_running_loop();
            let future: Future<&str> = lp.create_future();
            let setter = future.clone();
            lp.call_later(Duration::from_secs(1), move || {
                setter.set_result("forty-two");
            });
            let child = lp.create_task(async move { Ok(future.await?.len() * 4 + 6) });
            child.await
        })
        .unwrap();
    assert_eq!(answer, 42);

    let err = event_loop
        .run_until_complete(async {
            let child = get_running_loop()
                .create_task(async { anyhow::bail!("the child failed") as anyhow::Result<()> });
            child.await
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "the child failed");
    assert_eq!(event_loop.pending_tasks(), 0);
    event_loop.close();
}

/// Sets its flag when dropped: the `finally` of a coroutine.
struct Cleanup(Rc<Cell<bool>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

#[test]
fn cancel_delivers_cancelled_at_the_await_and_the_coroutine_cleans_up() {
    let (event_loop, _clock) = test_loop();
    let observed = Rc::new(RefCell::new(None));
    let cleaned = Rc::new(Cell::new(false));
    let (obs, clean) = (observed.clone(), cleaned.clone());
    let cancelled = event_loop
        .run_until_complete(async move {
            let lp = get_running_loop();
            let child = lp.create_task(async move {
                let _finally = Cleanup(clean);
                // Suspended here, for an hour of loop time.
                let slept = sleep(Duration::from_secs(3600)).await;
                *obs.borrow_mut() = Some(match &slept {
                    Err(err) => is_cancelled(err),
                    Ok(()) => false,
                });
                slept
            });
            sleep(Duration::from_secs(1)).await?;
            assert!(child.cancel());
            let outcome = child.clone().await;
            Ok((
                child.cancelled(),
                outcome.unwrap_err().is::<Cancelled>(),
                lp.pending_timers(),
            ))
        })
        .unwrap();
    // The coroutine saw `Cancelled` come out of its `.await`, its cleanup
    // ran, the task ended cancelled, and its sleep's timer is gone.
    assert_eq!(*observed.borrow(), Some(true));
    assert!(cleaned.get());
    assert_eq!(cancelled, (true, true, 0));
    event_loop.close();
}

#[test]
fn a_coroutine_may_catch_the_cancellation_and_return_normally() {
    let (event_loop, _clock) = test_loop();
    let result = event_loop
        .run_until_complete(async {
            let child = get_running_loop().create_task(async {
                match sleep(Duration::from_secs(10)).await {
                    Err(err) if is_cancelled(&err) => Ok("caught"),
                    other => other.map(|()| "slept"),
                }
            });
            sleep(Duration::from_secs(1)).await?;
            child.cancel();
            child.await
        })
        .unwrap();
    assert_eq!(result, "caught");
    event_loop.close();
}

/// The same as with a sleep, for the simplest thing a task can wait on: a
/// future that nobody will ever resolve. Cancelling the task is the only
/// way out, and it must come out of that `.await` as `Cancelled`.
#[test]
fn cancel_reaches_a_task_waiting_on_a_future_nobody_resolves() {
    let (event_loop, _clock) = test_loop();
    let observed = Rc::new(RefCell::new(None));
    let cleaned = Rc::new(Cell::new(false));
    let (obs, clean) = (observed.clone(), cleaned.clone());
    let ended = event_loop
        .run_until_complete(async move {
            let lp = get_running_loop();
            let never: Future<()> = lp.create_future();
            let child = lp.create_task(async move {
                let _finally = Cleanup(clean);
                let waited = never.await;
                *obs.borrow_mut() = Some(matches!(&waited, Err(err) if is_cancelled(err)));
                waited
            });
            // Let the child take its first step and suspend: a future set
            // by a callback queued after that step wakes this task next.
            let tick: Future<()> = lp.create_future();
            let set = tick.clone();
            lp.call_soon(move || {
                set.set_result(());
            });
            tick.await?;
            assert!(!child.done(), "the child ended without being cancelled");
            assert!(child.cancel());
            let outcome = child.clone().await;
            Ok((
                child.cancelled(),
                outcome.is_err_and(|err| err.is::<Cancelled>()),
            ))
        })
        .unwrap();
    // `Cancelled` came out of the child's `.await`, its `?`-less return
    // carried it up, its cleanup ran, and the task ended cancelled.
    assert_eq!(*observed.borrow(), Some(true));
    assert!(cleaned.get(), "the child's coroutine was not dropped");
    assert_eq!(ended, (true, true));
    event_loop.close();
}

#[test]
fn a_task_cancelled_before_its_first_step_never_runs() {
    let (event_loop, _clock) = test_loop();
    let ran = Rc::new(Cell::new(false));
    let flag = ran.clone();
    let (ran_at_all, cancelled) = event_loop
        .run_until_complete(async move {
            let child = get_running_loop().create_task(async move {
                flag.set(true);
                Ok(())
            });
            child.cancel();
            let outcome = child.clone().await;
            Ok((outcome.is_ok(), child.cancelled()))
        })
        .unwrap();
    assert!(!ran.get());
    assert!(!ran_at_all);
    assert!(cancelled);
    assert!(!event_loop.create_task(async { Ok(()) }).cancelled());
    event_loop.close();
}

#[test]
fn join_waits_for_every_task_done_including_items_put_by_workers() {
    let (event_loop, _clock) = test_loop();
    let trace = Trace::default();
    let t = trace.clone();
    event_loop
        .run_until_complete(async move {
            let lp = get_running_loop();
            let q: Queue<u32> = Queue::new();
            q.put_nowait(3);
            let workers: Vec<_> = (0..2)
                .map(|w| {
                    let (q, t) = (q.clone(), t.clone());
                    lp.create_task(async move {
                        loop {
                            let n: u32 = q.get().await?;
                            sleep(Duration::from_secs(1)).await?;
                            // New work is put before this item is done, so
                            // the count of unfinished items never hits zero early.
                            if n > 0 {
                                q.put_nowait(n - 1);
                                q.put_nowait(n - 1);
                            }
                            t.push(format!("worker {w} did {n}"));
                            q.task_done()?;
                        }
                        #[allow(unreachable_code)]
                        Ok::<(), anyhow::Error>(())
                    })
                })
                .collect();
            q.join().await?;
            t.push(format!("joined, unfinished {}", q.unfinished_tasks()));
            for worker in &workers {
                worker.cancel();
            }
            for worker in workers {
                assert!(is_cancelled(&worker.await.unwrap_err()));
            }
            // The counter cannot go below zero.
            assert!(q.task_done().is_err());
            // `join` on a finished queue returns at once.
            q.join().await
        })
        .unwrap();
    let lines = trace.lines();
    // 3 → two 2s → four 1s → eight 0s: 15 items, then the join.
    assert_eq!(lines.len(), 16);
    assert_eq!(lines.last().unwrap(), "joined, unfinished 0");
    event_loop.close();
}

#[test]
fn a_cancelled_getter_does_not_swallow_an_item() {
    let (event_loop, _clock) = test_loop();
    let got = event_loop
        .run_until_complete(async {
            let lp = get_running_loop();
            let q: Queue<&str> = Queue::new();
            let (q1, q2) = (q.clone(), q.clone());
            let first = lp.create_task(async move { q1.get().await });
            let second = lp.create_task(async move { q2.get().await });
            sleep(Duration::from_secs(1)).await?;
            // Both are waiting; the first is woken by the put, but cancelled
            // in the same turn: the item must reach the second.
            q.put_nowait("item");
            first.cancel();
            assert!(is_cancelled(&first.await.unwrap_err()));
            wait_for(second, Duration::from_secs(5)).await
        })
        .unwrap();
    assert_eq!(got, "item");
    event_loop.close();
}

#[test]
fn gather_returns_results_in_argument_order() {
    let (event_loop, _clock) = test_loop();
    let results = event_loop
        .run_until_complete(gather([3u64, 1, 2].map(|secs| async move {
            sleep(Duration::from_secs(secs)).await?;
            Ok(secs * 10)
        })))
        .unwrap();
    assert_eq!(results, [30, 10, 20]);

    let empty: Vec<u8> = event_loop
        .run_until_complete(gather(Vec::<std::future::Ready<anyhow::Result<u8>>>::new()))
        .unwrap();
    assert!(empty.is_empty());
    event_loop.close();
}

#[test]
fn gather_fails_with_the_first_error() {
    let (event_loop, _clock) = test_loop();
    let err = event_loop
        .run_until_complete(gather([1u64, 2, 3].map(|secs| async move {
            sleep(Duration::from_secs(secs)).await?;
            if secs >= 2 {
                anyhow::bail!("child {secs} failed");
            }
            Ok(secs)
        })))
        .unwrap_err();
    assert_eq!(err.to_string(), "child 2 failed");
    event_loop.close();
}

#[test]
fn cancelling_a_gather_cancels_its_children() {
    let (event_loop, _clock) = test_loop();
    let cleaned = Rc::new(Cell::new(0));
    let c = cleaned.clone();
    event_loop
        .run_until_complete(async move {
            let lp = get_running_loop();
            let children = (0..3).map(move |_| {
                let c = c.clone();
                async move {
                    let _finally = CountOnDrop(c);
                    sleep(Duration::from_secs(3600)).await
                }
            });
            let outer = lp.create_task(gather(children));
            sleep(Duration::from_secs(1)).await?;
            outer.cancel();
            assert!(is_cancelled(&outer.await.unwrap_err()));
            // Give the children's cancelled steps a turn.
            sleep(Duration::from_secs(1)).await
        })
        .unwrap();
    assert_eq!(cleaned.get(), 3);
    assert_eq!(event_loop.pending_tasks(), 0);
    event_loop.close();
}

struct CountOnDrop(Rc<Cell<usize>>);

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

#[test]
fn wait_for_times_out_at_the_deadline_and_drops_the_awaitable() {
    let (event_loop, _clock) = test_loop();
    let start = event_loop.time();
    let cleaned = Rc::new(Cell::new(false));
    let clean = cleaned.clone();
    let lp = event_loop.clone();
    let (err, at) = event_loop
        .run_until_complete(async move {
            let slow = async move {
                let _finally = Cleanup(clean);
                sleep(Duration::from_secs(60)).await?;
                Ok("too late")
            };
            let err = wait_for(pin!(slow), Duration::from_millis(2500))
                .await
                .unwrap_err();
            Ok((err, lp.time() - start))
        })
        .unwrap();
    assert_eq!(err.downcast_ref::<TimeoutError>(), Some(&TimeoutError));
    assert_eq!(err.to_string(), "timed out");
    assert_eq!(at, Duration::from_millis(2500));
    assert!(cleaned.get());
    // Neither the abandoned sleep's timer nor the deadline's is left behind.
    assert_eq!(event_loop.pending_timers(), 0);
    event_loop.close();
}

#[test]
fn wait_for_returns_the_result_when_in_time() {
    let (event_loop, _clock) = test_loop();
    let value = event_loop
        .run_until_complete(async {
            let fast = async {
                sleep(Duration::from_secs(1)).await?;
                Ok(5)
            };
            wait_for(pin!(fast), Duration::from_secs(2)).await
        })
        .unwrap();
    assert_eq!(value, 5);
    assert_eq!(event_loop.pending_timers(), 0);
    event_loop.close();
}

#[test]
fn a_waker_used_from_another_thread_still_steps_the_task() {
    let event_loop = EventLoop::new().unwrap();
    let value = event_loop
        .run_until_complete(async {
            let flag = Arc::new(AtomicBool::new(false));
            let mut spawned = false;
            std::future::poll_fn(move |cx| {
                if flag.load(Ordering::SeqCst) {
                    return Poll::Ready(Ok("woken"));
                }
                if !spawned {
                    spawned = true;
                    let (flag, waker) = (flag.clone(), cx.waker().clone());
                    std::thread::spawn(move || {
                        flag.store(true, Ordering::SeqCst);
                        waker.wake();
                    });
                }
                Poll::Pending
            })
            .await
        })
        .unwrap();
    assert_eq!(value, "woken");
    event_loop.close();
}

#[test]
fn sockets_connect_write_and_read_through_the_loop() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut request = [0u8; 5];
        stream.read_exact(&mut request).unwrap();
        stream.write_all(b"echo:").unwrap();
        stream.write_all(&request).unwrap();
        // Closing the connection ends the reply.
    });
    let reply = lesson4_asyncio_style::event_loop::run(async move {
        let mut socket = Socket::connect(&addr).await?;
        socket.write_all(b"hello").await?;
        let mut reply = Vec::new();
        loop {
            let n = socket
                .read(|bytes| {
                    reply.extend_from_slice(bytes);
                    bytes.len()
                })
                .await?;
            if n == 0 {
                return Ok(reply);
            }
        }
    })
    .unwrap();
    assert_eq!(reply, b"echo:hello");
    server.join().unwrap();
}

#[test]
fn connecting_to_a_closed_port_fails() {
    let addr = refused_addr();
    let err =
        lesson4_asyncio_style::event_loop::run(
            async move { Socket::connect(&addr).await.map(|_| ()) },
        )
        .unwrap_err();
    let io = err.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn a_stalled_read_ends_with_wait_for_and_leaves_nothing_registered() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let event_loop = EventLoop::new().unwrap();
    let err = event_loop
        .run_until_complete(async move {
            let mut socket = Socket::connect(&addr).await?;
            // The listener accepts (in the kernel) but never writes.
            let read = wait_for(
                pin!(socket.read(|bytes| bytes.len())),
                Duration::from_millis(50),
            )
            .await;
            read
        })
        .unwrap_err();
    assert!(err.is::<TimeoutError>());
    assert_eq!(event_loop.pending_timers(), 0);
    event_loop.close();
    drop(listener);
}

/// A waker that counts its wake-ups: a reader for a test, with no task.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_reader_is_woken_whenever_its_socket_is_readable_until_removed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let event_loop = EventLoop::new().unwrap();
    let mut stream = mio::net::TcpStream::connect(addr).unwrap();
    let token = event_loop.register(&mut stream).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    // Nothing else to do, so a turn waits for the socket; this timer only
    // bounds the wait if the test is broken.
    event_loop.call_later(Duration::from_secs(10), || {});

    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    event_loop
        .add_reader(token, &Waker::from(wakes.clone()))
        .unwrap();
    server.write_all(b"ping").unwrap();
    event_loop.run_once().unwrap();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    // Still installed: more bytes are another readiness edge, another wake-up
    // (nobody read the first ones).
    server.write_all(b"pong").unwrap();
    event_loop.run_once().unwrap();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 2);

    assert!(event_loop.remove_reader(token));
    assert!(!event_loop.remove_reader(token));
    // New bytes, no reader: nobody is woken (a timer ends the wait instead).
    server.write_all(b"more").unwrap();
    let lp = event_loop.clone();
    event_loop.call_later(Duration::from_millis(50), move || lp.stop());
    event_loop.run_forever().unwrap();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 2);

    event_loop.deregister(&mut stream, token);
    assert!(event_loop
        .add_reader(token, &Waker::from(wakes.clone()))
        .is_err());
    event_loop.close();
}

#[test]
fn close_drops_pending_tasks_and_refuses_new_work() {
    let (event_loop, _clock) = test_loop();
    let cleaned = Rc::new(Cell::new(false));
    let clean = cleaned.clone();
    let task = event_loop.create_task(async move {
        let _finally = Cleanup(clean);
        sleep(Duration::from_secs(3600)).await
    });
    event_loop.run_once().unwrap();
    assert!(!task.done());
    event_loop.close();
    // The suspended coroutine was dropped, and its cleanup ran.
    assert!(cleaned.get());
    assert_eq!(event_loop.pending_tasks(), 0);
    assert_eq!(event_loop.pending_timers(), 0);
    let ran = Rc::new(Cell::new(false));
    let flag = ran.clone();
    assert!(event_loop.call_soon(move || flag.set(true)).cancelled());
    assert!(event_loop.run_forever().is_err());
    assert!(!ran.get());
}
