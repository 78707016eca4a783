//! The tutorial's generator transcripts, replayed against the hand-written
//! generators of `generator.rs`: what each resume yields, what it prints, what
//! it returns, and that resuming a finished generator is an error.

use lesson3_generators::generator::{
    caller_fn, fib, gen_fn, CallerFrame, Coroutine, Fib, Finished, GenFnFrame, State, Transcript,
};

#[test]
fn fib_yields_the_sequence_like_next() {
    // >>> fib = fib()
    // >>> next(fib)  # 0
    // >>> next(fib)  # 1
    let mut gen = fib();
    assert_eq!(gen.resume(()), Ok(State::Yielded(0)), "fib's 1st resume");
    assert_eq!(gen.resume(()), Ok(State::Yielded(1)), "fib's 2nd resume");
    assert_eq!(gen.resume(()), Ok(State::Yielded(1)), "fib's 3rd resume");
    assert_eq!(gen.resume(()), Ok(State::Yielded(2)), "fib's 4th resume");
    // The frame holds nothing but the two locals.
    assert_eq!(
        gen,
        Fib::Running { a: 3, b: Some(5) },
        "fib's frame after yielding 2: the next two numbers, a = 3 and b = 5"
    );
}

#[test]
fn fib_is_an_iterator() {
    let first: Vec<u64> = fib().take(10).collect();
    assert_eq!(
        first,
        [0, 1, 1, 2, 3, 5, 8, 13, 21, 34],
        "the first ten items of fib() as an iterator (Iterator::next resumes it)"
    );
}

#[test]
fn fib_stops_at_the_last_number_that_fits_in_a_u64() {
    // F(0) ..= F(93): 94 numbers; F(94) would overflow. At most 200 are
    // taken, so an iterator that never says `None` fails here instead of
    // collecting for ever.
    let all: Vec<u64> = fib().take(200).collect();
    assert_eq!(
        all.len(),
        94,
        "how many numbers fib() yields: F(0) to F(93), the last that fits in a u64 \
         (200 means it never ended: Iterator::next must give None once resume says the \
         generator is complete or finished)"
    );
    assert_eq!(
        all.last(),
        Some(&12_200_160_415_121_876_738),
        "fib()'s last number: F(93)"
    );
    assert!(
        all.windows(3).all(|w| w[0] + w[1] == w[2]),
        "fib() yielded a number that is not the sum of the two before it"
    );

    let mut gen = fib();
    for _ in 0..94 {
        assert!(
            matches!(gen.resume(()), Ok(State::Yielded(_))),
            "one of fib's first 94 resumes did not yield a number"
        );
    }
    assert_eq!(
        gen.resume(()),
        Ok(State::Complete(())),
        "fib's 95th resume: it returns instead of overflowing"
    );
    assert_eq!(
        gen.resume(()),
        Err(Finished),
        "resume of a finished fib: Err(Finished), Python's second StopIteration"
    );
    assert_eq!(gen.next(), None, "next() of a finished fib");
}

// ANCHOR: transcript
#[test]
fn gen_fn_replays_the_tutorial_transcript() {
    let out = Transcript::new();
    // >>> gen = gen_fn()          # nothing runs yet
    let mut gen = gen_fn(&out);
    assert_eq!(gen.frame(), &GenFnFrame::Created, "frame before any send");
    assert!(out.lines().is_empty(), "printed before any send");

    // >>> gen.send(None)
    // 1
    assert_eq!(gen.resume(None), Ok(State::Yielded(1)), "send(None)");
    assert_eq!(
        gen.frame(),
        &GenFnFrame::AtFirstYield,
        "frame after send(None)"
    );
    assert!(out.lines().is_empty(), "printed by send(None): nothing");

    // >>> gen.send('hello')
    // result of yield: hello
    // 2
    assert_eq!(
        gen.resume(Some("hello")),
        Ok(State::Yielded(2)),
        "send('hello')"
    );
    assert_eq!(out.lines(), ["result of yield: hello"], "printed so far");
    // >>> gen.gi_frame.f_locals
    // {'result': 'hello'}
    assert_eq!(
        gen.frame(),
        &GenFnFrame::AtSecondYield {
            result: "hello".to_string()
        },
        "frame after send('hello'): its local `result`"
    );

    // >>> gen.send('goodbye')
    // result of 2nd yield: goodbye
    // StopIteration: done
    assert_eq!(
        gen.resume(Some("goodbye")),
        Ok(State::Complete("done")),
        "send('goodbye'): it returns \"done\""
    );
    assert_eq!(
        out.lines(),
        ["result of yield: hello", "result of 2nd yield: goodbye"],
        "printed so far"
    );

    // A finished generator raises StopIteration again: an error, not a panic,
    // and nothing is printed.
    assert_eq!(
        gen.resume(Some("again")),
        Err(Finished),
        "send after the end: a generator that has returned answers Err(Finished) and \
         prints nothing; it must not run its last step again (the step that returns \
         must leave the frame Returned)"
    );
    assert_eq!(gen.resume(None), Err(Finished), "send after the end, again");
    assert_eq!(out.lines().len(), 2, "lines printed: none after the end");
}
// ANCHOR_END: transcript

#[test]
fn send_none_prints_none_like_python() {
    let out = Transcript::new();
    let mut gen = gen_fn(&out);
    gen.resume(None)
        .expect("`resume` must run the generator to its next yield");
    gen.resume(None)
        .expect("`resume` must run the generator to its next yield");
    assert_eq!(
        out.lines(),
        ["result of yield: None"],
        "printed after send(None) twice: a None sent in prints as Python's None"
    );
}

#[test]
fn yield_from_delegates_to_the_sub_generator() {
    let out = Transcript::new();
    let mut caller = caller_fn(&out);

    // >>> caller.send(None)
    // 1
    assert_eq!(
        caller.resume(None),
        Ok(State::Yielded(1)),
        "caller's send(None): gen's first yield, passed out"
    );
    assert!(
        matches!(caller.frame(), CallerFrame::Delegating { .. }),
        "caller's frame after its first send is {:?}, not Delegating (in its yield from)",
        caller.frame()
    );

    // >>> caller.send('hello')
    // result of yield: hello
    // 2
    assert_eq!(
        caller.resume(Some("hello")),
        Ok(State::Yielded(2)),
        "caller's send('hello'): passed in to gen, gen's second yield passed out"
    );
    // The caller has not moved (`f_lasti` is still 15): it stays on its one
    // `yield from` line while the sub-generator runs.
    match caller.frame() {
        CallerFrame::Delegating { gen } => assert_eq!(
            gen.frame(),
            &GenFnFrame::AtSecondYield {
                result: "hello".to_string()
            },
            "the frame of the gen inside caller's frame: moved on to its second yield"
        ),
        other => panic!("caller left its yield from: {other:?}"),
    }

    // >>> caller.send('goodbye')
    // result of 2nd yield: goodbye
    // return value of yield-from: done
    // StopIteration
    assert_eq!(
        caller.resume(Some("goodbye")),
        Ok(State::Complete(())),
        "caller's send('goodbye'): gen returns, then caller returns"
    );
    assert_eq!(
        out.lines(),
        [
            "result of yield: hello",
            "result of 2nd yield: goodbye",
            "return value of yield-from: done",
        ],
        "printed: gen's two lines, then caller's with gen's return value"
    );
    assert_eq!(
        caller.resume(None),
        Err(Finished),
        "resume of a finished caller"
    );
}
