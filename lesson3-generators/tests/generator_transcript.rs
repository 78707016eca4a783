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
    assert_eq!(gen.resume(()), Ok(State::Yielded(0)));
    assert_eq!(gen.resume(()), Ok(State::Yielded(1)));
    assert_eq!(gen.resume(()), Ok(State::Yielded(1)));
    assert_eq!(gen.resume(()), Ok(State::Yielded(2)));
    // The frame holds nothing but the two locals.
    assert_eq!(gen, Fib::Running { a: 3, b: Some(5) });
}

#[test]
fn fib_is_an_iterator() {
    let first: Vec<u64> = fib().take(10).collect();
    assert_eq!(first, [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]);
}

#[test]
fn fib_stops_at_the_last_number_that_fits_in_a_u64() {
    // F(0) ..= F(93): 94 numbers; F(94) would overflow.
    let all: Vec<u64> = fib().collect();
    assert_eq!(all.len(), 94);
    assert_eq!(all.last(), Some(&12_200_160_415_121_876_738));
    assert!(all.windows(3).all(|w| w[0] + w[1] == w[2]));

    let mut gen = fib();
    for _ in 0..94 {
        assert!(matches!(gen.resume(()), Ok(State::Yielded(_))));
    }
    assert_eq!(gen.resume(()), Ok(State::Complete(())));
    assert_eq!(gen.resume(()), Err(Finished));
    assert_eq!(gen.next(), None);
}

// ANCHOR: transcript
#[test]
fn gen_fn_replays_the_tutorial_transcript() {
    let out = Transcript::new();
    // >>> gen = gen_fn()          # nothing runs yet
    let mut gen = gen_fn(&out);
    assert_eq!(gen.frame(), &GenFnFrame::Created);
    assert!(out.lines().is_empty());

    // >>> gen.send(None)
    // 1
    assert_eq!(gen.resume(None), Ok(State::Yielded(1)));
    assert_eq!(gen.frame(), &GenFnFrame::AtFirstYield);
    assert!(out.lines().is_empty());

    // >>> gen.send('hello')
    // result of yield: hello
    // 2
    assert_eq!(gen.resume(Some("hello")), Ok(State::Yielded(2)));
    assert_eq!(out.lines(), ["result of yield: hello"]);
    // >>> gen.gi_frame.f_locals
    // {'result': 'hello'}
    assert_eq!(
        gen.frame(),
        &GenFnFrame::AtSecondYield {
            result: "hello".to_string()
        }
    );

    // >>> gen.send('goodbye')
    // result of 2nd yield: goodbye
    // StopIteration: done
    assert_eq!(gen.resume(Some("goodbye")), Ok(State::Complete("done")));
    assert_eq!(
        out.lines(),
        ["result of yield: hello", "result of 2nd yield: goodbye"]
    );

    // A finished generator raises StopIteration again: an error, not a panic,
    // and nothing is printed.
    assert_eq!(gen.resume(Some("again")), Err(Finished));
    assert_eq!(gen.resume(None), Err(Finished));
    assert_eq!(out.lines().len(), 2);
}
// ANCHOR_END: transcript

#[test]
fn send_none_prints_none_like_python() {
    let out = Transcript::new();
    let mut gen = gen_fn(&out);
    gen.resume(None).unwrap();
    gen.resume(None).unwrap();
    assert_eq!(out.lines(), ["result of yield: None"]);
}

#[test]
fn yield_from_delegates_to_the_sub_generator() {
    let out = Transcript::new();
    let mut caller = caller_fn(&out);

    // >>> caller.send(None)
    // 1
    assert_eq!(caller.resume(None), Ok(State::Yielded(1)));
    assert!(matches!(caller.frame(), CallerFrame::Delegating { .. }));

    // >>> caller.send('hello')
    // result of yield: hello
    // 2
    assert_eq!(caller.resume(Some("hello")), Ok(State::Yielded(2)));
    // The caller has not moved (`f_lasti` is still 15): it stays on its one
    // `yield from` line while the sub-generator runs.
    match caller.frame() {
        CallerFrame::Delegating { gen } => assert_eq!(
            gen.frame(),
            &GenFnFrame::AtSecondYield {
                result: "hello".to_string()
            }
        ),
        other => panic!("caller left its yield from: {other:?}"),
    }

    // >>> caller.send('goodbye')
    // result of 2nd yield: goodbye
    // return value of yield-from: done
    // StopIteration
    assert_eq!(caller.resume(Some("goodbye")), Ok(State::Complete(())));
    assert_eq!(
        out.lines(),
        [
            "result of yield: hello",
            "result of 2nd yield: goodbye",
            "return value of yield-from: done",
        ]
    );
    assert_eq!(caller.resume(None), Err(Finished));
}
