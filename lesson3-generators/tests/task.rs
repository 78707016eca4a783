//! Tests of `src/task.rs`: a task steps its coroutine, and its waker schedules
//! the next step on the loop. Each test is bounded (see
//! `shared::fixtures::bound`): a waker that schedules nothing would otherwise
//! leave the loop waiting for ever.

use std::cell::{Cell, RefCell};
use std::future::Future as _;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::future::Future;
use shared::fixtures::bound::within;

/// What to look at when a task is never stepped again.
const NEVER_STEPPED: &str = "a task was never stepped again. Look at the task's waker \
    (wake_by_ref must reach EventLoop::wake_task, which calls schedule), at schedule \
    (call_soon a step unless one is queued) and at step (clear the `scheduled` flag, poll, \
    put the coroutine back on Pending)";

#[test]
fn a_future_resolved_before_it_is_awaited_resumes_at_once() {
    // The tutorial's bug: its Task would add `step` as a done-callback of
    // a future that is already done, and never run again.
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let steps = Rc::new(Cell::new(0));
        let count = Rc::clone(&steps);
        let task_loop = event_loop.clone();
        let got = event_loop
            .run_until_complete(async move {
                count.set(count.get() + 1);
                let f = task_loop.create_future();
                f.set_result(42);
                f.await
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            got, 42,
            "what run_until_complete returned: the coroutine's result"
        );
        assert_eq!(
            steps.get(),
            1,
            "times the coroutine's body started: one step runs straight through a done future"
        );
    });
}

#[test]
fn set_result_wakes_the_awaiting_task_through_the_ready_queue() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let f: Future<&'static str> = event_loop.create_future();
        let got = Rc::new(RefCell::new(None));
        let (wait, out) = (f.clone(), Rc::clone(&got));
        let task = event_loop.create_task(async move {
            *out.borrow_mut() = Some(wait.await);
        });
        assert_eq!(
            event_loop.pending_tasks(),
            1,
            "tasks in the loop's table after create_task: Task::new enters it (insert_task)"
        );
        // The first step runs to the `.await` and stops there.
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert!(
            !task.done(),
            "the task finished while its future had no result"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            1,
            "tasks in the table while the task waits: it stays until it finishes"
        );
        // Resolving the future only schedules the step: nothing runs yet.
        f.set_result("hi");
        assert!(
            got.borrow().is_none(),
            "the task ran inside set_result: its waker must schedule a step, not step it"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            *got.borrow(),
            Some("hi"),
            "what the task's `.await` gave, one turn after set_result(\"hi\")"
        );
        assert!(task.done(), "done() of a task whose coroutine returned");
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "tasks in the table after the only task finished: finish removes it (remove_task)"
        );
    });
}

#[test]
fn a_task_is_a_future_another_task_can_await() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let order = Rc::new(RefCell::new(Vec::new()));
        let (task_loop, o) = (event_loop.clone(), Rc::clone(&order));
        let total = event_loop
            .run_until_complete(async move {
                let o2 = Rc::clone(&o);
                let child = task_loop.create_task(async move {
                    o2.borrow_mut().push("child returns");
                    20
                });
                o.borrow_mut().push("parent waits");
                let got = child.await;
                o.borrow_mut().push("parent resumes");
                got + 1
            })
            .expect("`run_until_complete` must return Ok with what the coroutine returned");
        assert_eq!(
            total, 21,
            "the parent's result: the child task's 20, awaited, plus one"
        );
        assert_eq!(
            *order.borrow(),
            ["parent waits", "child returns", "parent resumes"],
            "the order things happened: a task created by a coroutine runs on a later turn, \
             and awaiting it waits for its result"
        );
    });
}

#[test]
fn two_wake_ups_before_a_step_schedule_one_step() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let polls = Rc::new(Cell::new(0));
        let (a, b, c): (Future<()>, Future<()>, Future<()>) = (
            event_loop.create_future(),
            event_loop.create_future(),
            event_loop.create_future(),
        );
        let (mut wait_a, mut wait_b, mut wait_c) = (a.clone(), b.clone(), c.clone());
        let count = Rc::clone(&polls);
        // A coroutine that waits on `a` and `b` at once, then on `c`, and
        // counts how often the task polls it.
        let task = event_loop.create_task(std::future::poll_fn(move |cx| {
            count.set(count.get() + 1);
            let a_ready = Pin::new(&mut wait_a).poll(cx).is_ready();
            let b_ready = Pin::new(&mut wait_b).poll(cx).is_ready();
            if a_ready && b_ready {
                Pin::new(&mut wait_c).poll(cx)
            } else {
                Poll::Pending
            }
        }));
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(polls.get(), 1, "polls after the first turn: the first step");
        // Both futures resolved in one turn, by a callback on the loop (as
        // two sockets ready at once would be): two wake-ups of one task.
        event_loop.call_soon(move || {
            a.set_result(());
            b.set_result(());
        });
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            polls.get(),
            1,
            "polls in the turn the futures were resolved: a waker schedules a step \
             for the next turn, it does not step the task"
        );
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            polls.get(),
            2,
            "polls after two wake-ups and one turn: one step is enough to see both \
             results. schedule must queue a step only when none is queued yet (the \
             `scheduled` flag, set by schedule), and step must clear the flag"
        );
        // A wake-up after that step must schedule a new one.
        c.set_result(());
        event_loop.run_once().expect(
            "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
        );
        assert_eq!(
            polls.get(),
            3,
            "polls after a third wake-up, once the step had run: step clears the \
             `scheduled` flag, so the next wake-up schedules again"
        );
        assert!(
            task.done(),
            "done() after the step that saw all three results"
        );
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "tasks in the table after the only task finished"
        );
    });
}

/// A coroutine that wakes its own task while it is polled (as one that
/// yields does) must be stepped again on the next turn: the wake-up comes
/// *during* the step, so the step must have cleared `scheduled` first.
#[test]
fn wake_up_during_the_poll_schedules_the_next_step() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let polls = Rc::new(Cell::new(0));
        let count = Rc::clone(&polls);
        let task = event_loop.create_task(std::future::poll_fn(move |cx| {
            count.set(count.get() + 1);
            if count.get() < 3 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        }));
        for _ in 0..3 {
            // Something else to run each turn, so that a turn with no step
            // queued ends at once instead of waiting for an event.
            event_loop.call_soon(|| {});
            event_loop.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
        }
        assert_eq!(
            polls.get(),
            3,
            "polls after three turns of a coroutine that wakes its own task while it is \
             being polled: each such wake-up must schedule the next step. step clears the \
             `scheduled` flag *before* it polls; cleared after the poll, the wake-up made \
             during it finds the flag still set, schedules nothing, and the task is never \
             stepped again"
        );
        assert!(task.done(), "done() after the third poll returned Ready");
    });
}

#[test]
fn run_until_complete_says_when_the_loop_stopped_first() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        let stopper = event_loop.clone();
        let result = event_loop.run_until_complete(async move {
            // Stops the loop, then waits for a future nobody resolves.
            stopper.stop();
            stopper.create_future::<()>().await;
        });
        let err = result.expect_err(
            "run_until_complete of a coroutine that never returned, the loop stopped: \
             an error, not a result",
        );
        assert_eq!(
            err.to_string(),
            "event loop stopped before the future completed",
            "run_until_complete's error when the loop stops before the task is done"
        );
    });
}

#[test]
fn a_task_created_on_a_closed_loop_is_never_stepped() {
    within(10, NEVER_STEPPED, || {
        let event_loop = EventLoop::new().expect(
            "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
        );
        event_loop.close();
        let ran = Rc::new(Cell::new(false));
        let flag = Rc::clone(&ran);
        let task = event_loop.create_task(async move { flag.set(true) });
        assert_eq!(
            event_loop.pending_tasks(),
            0,
            "tasks in a closed loop's table after create_task: insert_task enters nothing \
             once the loop is closed"
        );
        assert!(
            event_loop.run_until_complete(async {}).is_err(),
            "run_until_complete on a closed loop: an error (run_forever refuses to run)"
        );
        assert!(!ran.get(), "a task created on a closed loop ran");
        assert!(!task.done(), "done() of a task that never ran");
    });
}

#[test]
fn a_waker_woken_while_another_loop_runs_steps_its_own_task() {
    // A waker is `Send`: it can be woken wherever its future is resolved,
    // even inside a callback of another loop on the same thread. It must
    // reach its own loop (through `Remote`), never the loop that happens to
    // be running.
    within(
        10,
        "a task woken while another loop was running was never stepped: wake_by_ref \
         may call wake_task directly only when the running loop is the task's own \
         (its id is the waker's loop_id); otherwise the wake-up goes through Remote",
        || {
            let mine = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let other = EventLoop::new().expect(
                "`EventLoop::new` must return a loop (an Err here is the OS refusing a selector)",
            );
            let f: Future<u8> = mine.create_future();
            // The task awaits (a clone of) the future.
            let task = mine.create_task(f.clone());
            mine.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
            assert!(
                !task.done(),
                "the task waits for a future nobody has resolved yet"
            );
            // Resolved inside a callback of `other`: the running loop is
            // `other` while the task's waker is woken.
            other.call_soon(move || {
                f.set_result(4);
            });
            other.run_once().expect(
                "`run_once` must return Ok on an open loop: one turn, whatever its callbacks do",
            );
            assert_eq!(
                mine.run_until_complete(task)
                    .expect("`run_until_complete` must return Ok with what the coroutine returned"),
                4,
                "the task's result, once its own loop runs: the value set inside the other \
                 loop's callback"
            );
        },
    );
}
