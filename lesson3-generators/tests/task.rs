//! Tests of `src/task.rs`, through its public API.

use lesson3_generators::future::Future;
use lesson3_generators::task::*;
use std::cell::RefCell;
use std::rc::Rc;

fn task(
    id: usize,
    ready: &ReadyQueue,
    coro: impl std::future::Future<Output = ()> + 'static,
) -> Task {
    Task::new(TaskId(id), Box::pin(coro), ready)
}

#[test]
fn a_future_resolved_before_it_is_awaited_resumes_at_once() {
    // The tutorial's bug: its Task would add `step` as a done-callback of
    // a future that is already done, and never run again.
    let ready = ReadyQueue::new();
    let got = Rc::new(RefCell::new(None));
    let out = Rc::clone(&got);
    let mut t = task(0, &ready, async move {
        let f = Future::new();
        f.set_result(42);
        let v = f.await;
        *out.borrow_mut() = Some(v);
    });
    assert!(t.step(), "one step runs straight through a done future");
    assert_eq!(*got.borrow(), Some(42));
    assert!(ready.is_empty(), "nobody had to wake the task");
    assert!(t.done().done());
}

#[test]
fn set_result_wakes_the_awaiting_task_through_the_queue() {
    let ready = ReadyQueue::new();
    let f: Future<&'static str> = Future::new();
    let got = Rc::new(RefCell::new(None));
    let (wait, out) = (f.clone(), Rc::clone(&got));
    let mut t = task(7, &ready, async move {
        *out.borrow_mut() = Some(wait.await);
    });
    assert!(!t.step());
    assert!(ready.is_empty(), "waiting does not schedule anything");
    // Polling again while it waits (a spurious wake-up) must not leave a
    // second waker behind: one `set_result`, one wake-up.
    assert!(!t.step());
    f.set_result("hi");
    assert_eq!(ready.pop(), Some(TaskId(7)));
    assert!(ready.is_empty());
    assert!(t.step());
    assert_eq!(*got.borrow(), Some("hi"));
}

#[test]
fn a_finished_task_is_not_polled_again() {
    let ready = ReadyQueue::new();
    let mut t = task(1, &ready, async {});
    assert!(t.step());
    // An `async fn` polled after returning panics; the task never does it.
    assert!(t.step());
}
