//! Tests of the socket budget and its line (`SocketLine` in
//! `src/crawler.rs`): who may start now, who waits, and who goes when a
//! socket is closed. No loop and no network: the line only answers, and
//! the crawler does the starting.

use lesson2_callbacks::crawler::{SocketLine, Waiting};
use url::Url;

/// A page waiting for a socket: `/N`, at depth 0.
fn page(n: usize) -> Waiting {
    Waiting::Page(
        Url::parse(&format!("http://site.test/{n}")).expect("a fixture URL parses"),
        0,
    )
}

/// A host's robots.txt waiting for a socket, its answer thrown away.
fn robots() -> Waiting {
    Waiting::Robots(
        Url::parse("http://site.test/robots.txt").expect("a fixture URL parses"),
        Box::new(|_| {}),
    )
}

/// The paths of `fetches`, in order: what the test compares.
fn paths(fetches: &[Waiting]) -> Vec<String> {
    fetches
        .iter()
        .map(|fetch| {
            let (Waiting::Page(url, _) | Waiting::Robots(url, _)) = fetch;
            url.path().to_string()
        })
        .collect()
}

#[test]
fn a_fetch_starts_at_once_while_a_place_is_free_and_nobody_waits() {
    let mut line = SocketLine::new(2);
    assert!(
        line.admit(page(1), 0).is_some(),
        "with 0 of 2 places taken and nobody waiting, `admit` must let the fetch start now \
         (return it)"
    );
    assert!(
        line.admit(page(2), 1).is_some(),
        "with 1 of 2 places taken, `admit` must let the fetch start now"
    );
    assert!(
        line.admit(page(3), 2).is_none(),
        "with 2 of 2 places taken, `admit` must put the fetch in line (return None)"
    );
    assert_eq!(line.len(), 1, "the fetch kept waiting is in line: `len`");
}

#[test]
fn nobody_goes_ahead_of_the_line() {
    let mut line = SocketLine::new(1);
    assert!(
        line.admit(page(1), 1).is_none(),
        "the budget is spent: /1 waits"
    );
    // A place is free now (0 taken), but /1 came first.
    assert!(
        line.admit(page(2), 0).is_none(),
        "a fetch that arrives while others wait must join the back of the line even when a \
         place is free: going ahead could leave the first in line waiting for ever"
    );
    assert_eq!(
        paths(&line.let_go(0)),
        ["/1"],
        "`let_go` with one place free must let the first in line go"
    );
    assert_eq!(paths(&line.let_go(0)), ["/2"], "then the next");
}

#[test]
fn a_closed_socket_lets_as_many_go_as_there_are_free_places_first_come_first_served() {
    let mut line = SocketLine::new(3);
    for n in 1..=5 {
        assert!(
            line.admit(page(n), 3).is_none(),
            "the budget is spent: /{n} waits"
        );
    }
    assert_eq!(
        paths(&line.let_go(1)),
        ["/1", "/2"],
        "with 1 of 3 places taken, `let_go` must let exactly two go, the first two in line"
    );
    assert_eq!(
        paths(&line.let_go(3)),
        Vec::<String>::new(),
        "with every place taken, `let_go` must let nobody go"
    );
    assert_eq!(
        paths(&line.let_go(0)),
        ["/3", "/4", "/5"],
        "with every place free, `let_go` must let the whole rest of the line go, in order"
    );
    assert!(line.is_empty(), "nobody is left in line");
    assert_eq!(
        paths(&line.let_go(0)),
        Vec::<String>::new(),
        "an empty line lets nobody go"
    );
}

#[test]
fn out_of_descriptors_a_fetch_waits_at_the_head_and_the_budget_shrinks() {
    let mut line = SocketLine::new(100);
    assert!(
        line.admit(page(1), 100).is_none(),
        "the budget is spent: /1 waits"
    );
    // /2 was let through, and found no descriptor while 7 others held one.
    line.wait_again(page(2), 7);
    assert_eq!(
        line.budget(),
        7,
        "a fetch that found no descriptor while 7 others held one must lower the budget to 7: \
         the process cannot hold more sockets than they do"
    );
    assert_eq!(
        paths(&line.let_go(6)),
        ["/2"],
        "`wait_again` must put the fetch at the head of the line, ahead of those that waited \
         before it (it had its turn already), and with 6 of 7 places taken only it goes"
    );
    line.wait_again(page(3), 0);
    assert_eq!(
        line.budget(),
        1,
        "the budget never goes below 1: at 0 every fetch would wait for ever"
    );
    line.wait_again(page(4), 50);
    assert_eq!(line.budget(), 1, "`wait_again` never raises the budget");
}

#[test]
fn a_budget_of_zero_is_one() {
    let mut line = SocketLine::new(0);
    assert_eq!(
        line.budget(),
        1,
        "`SocketLine::new(0)` must make a budget of 1: with 0, every fetch would wait for ever"
    );
    assert!(
        line.admit(page(1), 0).is_some(),
        "a budget of 0 asked for still lets one fetch hold a socket"
    );
}

#[test]
fn robots_txt_waits_in_the_same_line_and_is_not_a_page() {
    let mut line = SocketLine::new(1);
    assert!(line.admit(page(1), 1).is_none());
    assert!(
        line.admit(robots(), 1).is_none(),
        "a robots.txt fetch holds a socket too: it must wait in the same line as the pages"
    );
    assert!(line.admit(page(2), 1).is_none());
    assert_eq!(line.len(), 3, "three fetches wait");
    assert_eq!(
        line.pages(),
        2,
        "`pages` counts the pages waiting, not the robots.txt fetches (a stranded crawl's \
         \"waiting for a socket\" is URLs)"
    );
    assert_eq!(
        paths(&line.let_go(0)),
        ["/1"],
        "one place: the first in line goes"
    );
    assert_eq!(
        paths(&line.let_go(0)),
        ["/robots.txt"],
        "then robots.txt, in its place in the line"
    );
}
