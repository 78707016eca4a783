//! # `gather`: run coroutines side by side, collect their results
//!
//! asyncio's `gather(*aws)` wraps each awaitable in a task, so they all make
//! progress at once, and returns one future that completes when they all
//! have: with the list of results, in the order given.
//! <!-- how -->
//! It is built from nothing but done-callbacks and a counter — the same
//! shape as the tutorial's hand-made `gather`, here over tasks that can fail.
//! <!-- /how -->
//!
//! As in asyncio (without `return_exceptions`): the first child to fail
//! fails the gather with its error, and the other children keep running; if
//! the task awaiting the gather is cancelled, the children are cancelled too.

use std::cell::{Cell, RefCell};
use std::future::Future as StdFuture;
use std::rc::Rc;

use crate::event_loop::get_running_loop;
use crate::future::Future;
use crate::task::Task;

// ANCHOR: gather
/// Run every awaitable in `aws` as a task; their results, in order.
pub async fn gather<T, F>(aws: impl IntoIterator<Item = F>) -> anyhow::Result<Vec<T>>
where
    T: 'static,
    F: StdFuture<Output = anyhow::Result<T>> + 'static,
{
    let event_loop = get_running_loop();
    let children: Vec<Task<T>> = aws
        .into_iter()
        .map(|aw| event_loop.create_task(aw))
        .collect();
    if children.is_empty() {
        return Ok(Vec::new());
    }

    let outer: Future<()> = event_loop.create_future();
    let results: Rc<RefCell<Vec<Option<T>>>> =
        Rc::new(RefCell::new(children.iter().map(|_| None).collect()));
    let remaining = Rc::new(Cell::new(children.len()));
    for (i, child) in children.iter().enumerate() {
        let (outer, results, remaining) = (outer.clone(), results.clone(), remaining.clone());
        child.add_done_callback(move |done| {
            remaining.set(remaining.get() - 1);
            match done.take_result() {
                Some(Ok(value)) => results.borrow_mut()[i] = Some(value),
                // The first failure (or cancellation) decides; later ones
                // find `outer` done and change nothing.
                Some(Err(err)) => {
                    outer.set_exception(err);
                }
                None => {}
            }
            if remaining.get() == 0 {
                outer.set_result(());
            }
        });
    }

    if let Err(err) = outer.clone().await {
        // `outer` still pending means the error is our own cancellation,
        // delivered while we waited: pass it on to the children.
        if !outer.done() {
            for child in &children {
                child.cancel();
            }
        }
        return Err(err);
    }
    let results = results.take();
    results
        .into_iter()
        .map(|value| value.ok_or_else(|| anyhow::anyhow!("a gathered task has no result")))
        .collect()
}
// ANCHOR_END: gather
