//! Tests of `src/task.rs`: a task steps its coroutine, and its waker
//! schedules the next step on the loop.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use lesson3_generators::event_loop::EventLoop;
use lesson3_generators::future::Future;

#[test]
fn a_future_resolved_before_it_is_awaited_resumes_at_once() {
    // The tutorial's bug: its Task would add `step` as a done-callback of
    // a future that is already done, and never run again.
    let event_loop = EventLoop::new().unwrap();
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
        .unwrap();
    assert_eq!(got, 42);
    assert_eq!(
        steps.get(),
        1,
        "one step runs straight through a done future"
    );
}

#[test]
fn set_result_wakes_the_awaiting_task_through_the_ready_queue() {
    let event_loop = EventLoop::new().unwrap();
    let f: Future<&'static str> = event_loop.create_future();
    let got = Rc::new(RefCell::new(None));
    let (wait, out) = (f.clone(), Rc::clone(&got));
    let task = event_loop.create_task(async move {
        *out.borrow_mut() = Some(wait.await);
    });
    // The first step runs to the `.await` and stops there.
    event_loop.run_once().unwrap();
    assert!(!task.done());
    assert_eq!(event_loop.pending_tasks(), 1);
    // Resolving the future only schedules the step: nothing runs yet.
    f.set_result("hi");
    assert!(got.borrow().is_none());
    event_loop.run_once().unwrap();
    assert_eq!(*got.borrow(), Some("hi"));
    assert!(task.done());
    assert_eq!(event_loop.pending_tasks(), 0);
}

#[test]
fn a_task_is_a_future_another_task_can_await() {
    let event_loop = EventLoop::new().unwrap();
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
        .unwrap();
    assert_eq!(total, 21);
    assert_eq!(
        *order.borrow(),
        ["parent waits", "child returns", "parent resumes"]
    );
}

#[test]
fn two_wake_ups_before_a_step_schedule_one_step() {
    let event_loop = EventLoop::new().unwrap();
    let steps = Rc::new(Cell::new(0));
    let count = Rc::clone(&steps);
    let (a, b): (Future<()>, Future<()>) = (event_loop.create_future(), event_loop.create_future());
    let (wait_a, wait_b) = (a.clone(), b.clone());
    event_loop.create_task(async move {
        count.set(count.get() + 1);
        wait_a.await;
        count.set(count.get() + 1);
        wait_b.await;
    });
    event_loop.run_once().unwrap();
    // Both resolved in one turn; the task is woken by `a` and `b` is done
    // by the time it gets there: one step runs through both.
    a.set_result(());
    b.set_result(());
    event_loop.run_once().unwrap();
    assert_eq!(steps.get(), 2);
    assert_eq!(event_loop.pending_tasks(), 0);
}
