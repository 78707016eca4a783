//! What each thread did, step by step, in the interleaving `loom` is
//! running; and the failure a model test shows: the rule, what went wrong,
//! and that interleaving, readable.

use std::cell::{Cell, RefCell};
use std::fmt::Debug;
use std::panic::{self, AssertUnwindSafe, Location};

/// The lesson's files, to name a lock by its field and a step by its
/// function.
const SOURCES: &[(&str, &str)] = &[
    ("queue.rs", include_str!("../../src/queue.rs")),
    ("pool.rs", include_str!("../../src/pool.rs")),
    ("crawler.rs", include_str!("../../src/crawler.rs")),
    ("polite.rs", include_str!("../../src/polite.rs")),
];

thread_local! {
    // `loom` runs every thread of a model on the test's own thread, one at
    // a time: one list per test, however many tests run at once.
    static STEPS: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
    static EXECUTIONS: Cell<usize> = const { Cell::new(0) };
    // Set while this thread runs a model (see `quiet_inside_models`).
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// The thread running now, by name; `None` once `loom` has stopped the
/// interleaving (a deadlock found), while the threads' stacks unwind.
fn current() -> Option<String> {
    panic::catch_unwind(|| loom::thread::current().name().unwrap_or("main").to_string()).ok()
}

/// Record one step of the thread running now.
pub fn step(what: String) {
    if let Some(thread) = current() {
        STEPS.with(|steps| steps.borrow_mut().push((thread, what)));
    }
}

/// Call `f`, a step of the test itself, recording the call and its result.
pub fn call<R: Debug>(what: &str, f: impl FnOnce() -> R) -> R {
    step(what.to_string());
    let result = f();
    step(format!("{what} returned {result:?}"));
    result
}

/// Start a thread of the test itself, named (the name is its column in a
/// failure's interleaving).
pub fn start<T: Send + 'static>(
    name: impl Into<String>,
    f: impl FnOnce() -> T + Send + 'static,
) -> loom::thread::JoinHandle<T> {
    loom::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("loom starts every thread it is asked to")
}

/// Wait for a thread the test started to end, recording the wait: its
/// result, or the panic that ended it, passed on.
pub fn finish<T>(thread: loom::thread::JoinHandle<T>) -> T {
    let name = thread.thread().name().unwrap_or("?").to_string();
    step(format!("waits for `{name}` to end"));
    thread
        .join()
        .unwrap_or_else(|panic| panic::resume_unwind(panic))
}

/// Where `at` is in the lesson: `queue.rs:131, in `get``.
pub fn place(at: &Location<'_>) -> String {
    let file = at.file().rsplit(['/', '\\']).next().unwrap_or(at.file());
    let line = at.line() as usize;
    let function = source(file).and_then(|text| {
        text.lines()
            .take(line)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .find_map(|l| {
                let (_, rest) = l.split_once("fn ")?;
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                (!name.is_empty()).then_some(name)
            })
    });
    match function {
        Some(function) => format!("{file}:{line}, in `{function}`"),
        None => format!("{file}:{line}"),
    }
}

/// The field a `Mutex::new` or `Condvar::new` at `at` is made for
/// (`not_empty: Condvar::new(),` is `not_empty`), else where it is.
pub fn field_at(at: &Location<'_>) -> String {
    let file = at.file().rsplit(['/', '\\']).next().unwrap_or(at.file());
    let line = source(file).and_then(|text| text.lines().nth(at.line() as usize - 1));
    line.and_then(|l| {
        let (field, _) = l.trim().split_once(':')?;
        field
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
            .then(|| field.to_string())
    })
    .unwrap_or_else(|| format!("{file}:{}", at.line()))
}

fn source(file: &str) -> Option<&'static str> {
    SOURCES
        .iter()
        .find(|(name, _)| *name == file)
        .map(|(_, text)| *text)
}

/// Run `test` under every interleaving of its threads that `loom` explores
/// (see the module header of `model.rs`); if one fails, fail with `rule`,
/// what went wrong, and that interleaving, step by step.
pub fn check<F>(rule: &str, test: F)
where
    F: Fn() + Send + Sync + 'static,
{
    EXECUTIONS.with(|n| n.set(0));
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(PREEMPTIONS);
    quiet_inside_models();
    QUIET.with(|quiet| quiet.set(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        model.check(move || {
            STEPS.with(|steps| steps.borrow_mut().clear());
            EXECUTIONS.with(|n| n.set(n.get() + 1));
            test();
        })
    }));
    QUIET.with(|quiet| quiet.set(false));
    let Err(payload) = outcome else {
        // Seen with `--nocapture`: how much the test explored.
        println!(
            "{} interleavings tried, none broke the rule",
            EXECUTIONS.with(Cell::get)
        );
        return;
    };
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".to_string());
    let what = if message.starts_with("deadlock") {
        "every thread still running is asleep, and none is left to wake it: \
         the test can never end"
            .to_string()
    } else {
        message
    };
    if what.contains("not yet implemented") {
        // A function not written yet: no rule is broken yet (and naming one
        // would make `starter check` take this for a classic mistake), and
        // there is no interleaving to show.
        panic!("{what}");
    }
    let steps = STEPS.with(|steps| steps.borrow().clone());
    let tried = EXECUTIONS.with(Cell::get);
    // The rule and what went wrong stay one line each, unwrapped: they hold
    // the words `starter check` looks for to name a mistake.
    panic!(
        "{rule}\n\nwhat went wrong: {what}\n\n{}",
        schedule(&steps, tried)
    );
}

/// A panic inside a model is not printed where it happens: a panic the
/// pool is meant to survive would be printed once per interleaving, and a
/// failure is printed once, by [`check`], with its interleaving.
fn quiet_inside_models() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let print = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                print(info);
            }
        }));
    });
}

/// How many times `loom` may switch threads where the running one could
/// have gone on. Every mistake the lesson's stages list for the queue, the
/// pool and the seen-set is found within it (`starter verify --mistakes`).
pub const PREEMPTIONS: usize = 3;

/// The interleaving, one turn per row: a turn is the steps one thread made
/// before another ran, in the order they ran. Then where each thread was
/// at the end.
fn schedule(steps: &[(String, String)], tried: usize) -> String {
    let mut threads: Vec<&str> = Vec::new();
    for (thread, _) in steps {
        if !threads.contains(&thread.as_str()) {
            threads.push(thread);
        }
    }
    let width = threads.iter().map(|t| t.len()).max().unwrap_or(4);
    let mut turns: Vec<(&str, Vec<&str>)> = Vec::new();
    for (thread, what) in steps {
        match turns.last_mut() {
            Some((last, whats)) if last == thread => whats.push(what),
            _ => turns.push((thread, vec![what])),
        }
    }
    let mut out = format!(
        "the interleaving that broke it (the {tried}{} loom tried), one thread's turn at a time:\n",
        ordinal(tried)
    );
    let hang = width + 9;
    for (i, (thread, whats)) in turns.iter().enumerate() {
        let lead = format!("  {:>3}  {thread:<width$}  ", i + 1);
        out.push_str(&wrap(&lead, &whats.join("; "), hang));
    }
    out.push_str("where each thread was at the end:\n");
    for thread in &threads {
        if let Some((_, last)) = steps.iter().rev().find(|(t, _)| t == thread) {
            let lead = format!("  {thread:<width$}  ");
            out.push_str(&wrap(&lead, last, width + 4));
        }
    }
    out
}

/// `text` after `lead`, in lines of at most [`WIDTH`] characters, the
/// lines after the first indented by `hang`; a line break in `text` is
/// kept.
fn wrap(lead: &str, text: &str, hang: usize) -> String {
    let mut out = String::new();
    let mut line = lead.to_string();
    let mut empty = true;
    for (i, paragraph) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(hang);
            empty = true;
        }
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(hang);
                empty = true;
            }
            if !empty {
                line.push(' ');
            }
            line.push_str(word);
            empty = false;
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The widest line of an interleaving: 80 columns, and `starter check`
/// indents it by four.
const WIDTH: usize = 80;

fn ordinal(n: usize) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}
