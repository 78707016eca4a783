//! Tests of the pool's socket budget and its line (`SocketLine` in
//! `src/connection_pool.rs`): free slots taken and given back, waiters
//! resolved oldest first with what frees up, cancelled waiters passed by,
//! and slots retired when the process has fewer descriptors than the
//! budget. No socket: the line only counts, and resolves futures.

use lesson4_asyncio_style::connection_pool::SocketLine;
use lesson4_asyncio_style::event_loop::run;

/// Runs `body` as a coroutine on a new loop (a waiter's future is made on
/// the running loop), failing the test with the rule `body` broke.
fn on_a_loop(body: impl std::future::Future<Output = anyhow::Result<()>> + 'static) {
    run(body).expect("the test's coroutine runs to its end on a new loop");
}

/// What `waiter` was resolved with, if it was.
fn resolved_with(waiter: &lesson4_asyncio_style::future::Future<u32>) -> Option<u32> {
    waiter.take_result().and_then(|result| result.ok())
}

#[test]
fn free_slots_are_taken_until_none_is_left() {
    on_a_loop(async {
        let line: SocketLine<u32> = SocketLine::new(2);
        assert_eq!(line.taken(), 0, "a new line has no slot taken");
        assert!(
            line.try_take(),
            "the first of 2 slots: `try_take` must take it"
        );
        assert!(
            line.try_take(),
            "the second of 2 slots: `try_take` must take it"
        );
        assert!(
            !line.try_take(),
            "with both slots taken, `try_take` must say no (and take nothing)"
        );
        assert_eq!(line.taken(), 2, "`taken` counts the 2 slots taken");
        line.give_back();
        assert_eq!(line.taken(), 1, "`give_back` frees one slot");
        assert!(line.try_take(), "a slot given back can be taken again");
        Ok(())
    });
}

#[test]
fn a_budget_of_zero_is_one() {
    on_a_loop(async {
        let line: SocketLine<u32> = SocketLine::new(0);
        assert!(
            line.try_take(),
            "`SocketLine::new(0)` must leave one slot: with none, every fetch would wait for ever"
        );
        assert!(!line.try_take(), "and only one");
        Ok(())
    });
}

#[test]
fn what_frees_up_goes_to_the_oldest_waiter() {
    on_a_loop(async {
        let line: SocketLine<u32> = SocketLine::new(1);
        assert!(line.try_take());
        let first = line.join();
        let second = line.join();
        assert_eq!(line.waiting(), 2, "two fetches wait in line: `waiting`");
        assert_eq!(
            line.hand_over(7),
            None,
            "with fetches waiting, `hand_over` must hand what freed up to one of them (and \
             return None)"
        );
        assert_eq!(
            resolved_with(&first),
            Some(7),
            "`hand_over` must resolve the oldest waiter's future, the first to `join`, with \
             what freed up"
        );
        assert!(!second.done(), "the second waiter still waits");
        assert_eq!(line.waiting(), 1, "one fetch left waiting");
        assert_eq!(line.hand_over(8), None, "the second waiter's turn");
        assert_eq!(
            resolved_with(&second),
            Some(8),
            "the second waiter is resolved with what freed up next"
        );
        assert_eq!(
            line.hand_over(9),
            Some(9),
            "with nobody waiting, `hand_over` must give back what freed up, for the caller to \
             keep"
        );
        Ok(())
    });
}

#[test]
fn a_cancelled_waiter_is_passed_by() {
    on_a_loop(async {
        let line: SocketLine<u32> = SocketLine::new(1);
        assert!(line.try_take());
        let gone = line.join();
        let waiting = line.join();
        // The first fetch was cancelled while it waited.
        gone.cancel();
        assert_eq!(
            line.waiting(),
            1,
            "`waiting` must not count a waiter whose fetch was cancelled"
        );
        assert_eq!(line.hand_over(3), None, "a fetch still waits");
        assert_eq!(
            resolved_with(&waiting),
            Some(3),
            "`hand_over` must pass a cancelled waiter by and hand what freed up to the next \
             one: handed to the cancelled one, it would be lost"
        );
        Ok(())
    });
}

#[test]
fn retired_slots_leave_the_budget_for_good() {
    on_a_loop(async {
        let line: SocketLine<u32> = SocketLine::new(4);
        // One socket is open; a second connect has just found no descriptor
        // in its slot; two slots are free.
        assert!(line.try_take() && line.try_take());
        line.retire();
        assert_eq!(
            line.taken(),
            1,
            "`retire` must take the failed connect's slot and every free one out of the \
             budget, leaving only the open socket's: the process cannot hold more"
        );
        assert!(!line.try_take(), "no slot is free after `retire`");
        line.give_back();
        assert_eq!(
            line.taken(),
            0,
            "the open socket's slot, given back, is the budget's one slot, free"
        );
        assert!(line.try_take(), "and it can be taken again");
        Ok(())
    });
}
