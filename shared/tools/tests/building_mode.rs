//! The book's building mode, in a real browser.
//!
//! ```text
//! mdbook build docs
//! cargo test -p course-tools --test building_mode -- --ignored
//! ```
//!
//! Headless Chromium (`apt-get install chromium`; `$CHROMIUM` names another)
//! opens lesson 1's built chapter, served from `docs/book` by the course's
//! own static server on 127.0.0.1, and the test reads what the page shows:
//!
//! - reading mode (the default): every listing visible, nothing folded,
//!   the builders' contracts (`.building-along`) hidden;
//! - the "Building along" switch, clicked: exactly the listings that show
//!   code lesson 1's starter blanks are folded — the set `book-check`
//!   computes from the stage list and the code, not a list kept here — and
//!   every other listing still shows; the contracts show;
//! - a fold's button shows its listing;
//! - the mode is remembered on the next page, and `?mode=read` /
//!   `?mode=build` in a link set it;
//! - with the page's scripts off, even `?mode=build` reads as the book
//!   always has.
//!
//! Ignored by default, since it needs a browser and the built book;
//! `.ci/run` installs Chromium and runs it after `mdbook build docs`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use headless_chrome::protocol::cdp::Emulation;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;

use course_tools::building::Chapter;
use shared::fixtures::server::TestServer;
use shared::fixtures::static_files::StaticDir;

/// The checkout this test belongs to.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A listing's text, compared without trailing spaces and end lines: how
/// mdBook spaces a block's ends is not what is being tested.
fn normal(code: &str) -> String {
    code.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// What the page shows: each listing's text and whether it is visible,
/// each fold's state, the contracts' visibility, the switch, the mode.
#[derive(Debug)]
struct Page {
    /// Every listing of the chapter's main text: its code, and whether it
    /// takes room on the page.
    listings: Vec<(String, bool)>,
    /// How many `.lesson-code` wrappers the page has.
    folds: usize,
    /// Visible fold buttons (listings' and explanations').
    buttons: usize,
    /// Paragraphs inside `.lesson-how` folds, and how many are visible.
    how_prose: (usize, usize),
    /// `.building-along` blocks on the page, and how many are visible.
    contracts: (usize, usize),
    /// Whether a `.building-along` block added now would be visible.
    contract_probe_visible: bool,
    /// Whether the switch is there and checked.
    switch: Option<bool>,
    /// Whether `<html>` has the `building-mode` class.
    building: bool,
}

/// Reads [`Page`] from the tab, with one script.
fn read(tab: &Tab) -> Page {
    const SCRIPT: &str = r#"(() => {
        const shown = (el) => el.getClientRects().length > 0;
        const main = document.querySelector("main") || document.body;
        const listings = Array.from(main.querySelectorAll("pre")).map((pre) => {
            const code = pre.querySelector("code") || pre;
            return [code.textContent, shown(pre)];
        });
        const contracts = Array.from(document.querySelectorAll(".building-along"));
        const probe = document.createElement("div");
        probe.className = "building-along";
        probe.textContent = "probe";
        main.appendChild(probe);
        const probeShown = shown(probe);
        probe.remove();
        const box = document.getElementById("building-along");
        return JSON.stringify({
            listings,
            folds: main.querySelectorAll(".lesson-code").length,
            buttons: Array.from(main.querySelectorAll(".lesson-code-toggle, .lesson-how-toggle")).filter(shown).length,
            howProse: (() => {
                const ps = Array.from(main.querySelectorAll(".lesson-how p, .lesson-how table"));
                return [ps.length, ps.filter(shown).length];
            })(),
            contracts: [contracts.length, contracts.filter(shown).length],
            probe: probeShown,
            switch: box ? box.checked : null,
            building: document.documentElement.classList.contains("building-mode"),
        });
    })()"#;
    let value = tab
        .evaluate(SCRIPT, false)
        .expect("the page runs the test's script")
        .value
        .expect("the script returns a value");
    let json: Value =
        serde_json::from_str(value.as_str().expect("a JSON string")).expect("the script's JSON");
    let listings = json["listings"]
        .as_array()
        .expect("listings")
        .iter()
        .map(|l| {
            (
                normal(l[0].as_str().expect("a listing's text")),
                l[1].as_bool().expect("a listing's visibility"),
            )
        })
        .collect();
    let count = |v: &Value| v.as_u64().expect("a count") as usize;
    Page {
        listings,
        folds: count(&json["folds"]),
        buttons: count(&json["buttons"]),
        how_prose: (count(&json["howProse"][0]), count(&json["howProse"][1])),
        contracts: (count(&json["contracts"][0]), count(&json["contracts"][1])),
        contract_probe_visible: json["probe"].as_bool().expect("probe"),
        switch: json["switch"].as_bool(),
        building: json["building"].as_bool().expect("building"),
    }
}

/// Lesson 1's listings as `book-check` sees them: code, and whether it
/// shows blanked code (so building mode must fold it).
fn expected_listings() -> Vec<(String, bool)> {
    let chapter = Chapter::read(&root(), 1).expect("lesson 1's chapter and stage list");
    chapter
        .listings
        .iter()
        .map(|l| (normal(&l.code), l.shows_blanked_code()))
        .collect()
}

/// The folds building mode draws a button for in lesson 1's chapter: each
/// `lesson-how`, and each `lesson-code` outside one; and, for the first
/// button, how many listings of blanked code it opens.
fn expected_buttons() -> (usize, usize) {
    let chapter = Chapter::read(&root(), 1).expect("lesson 1's chapter and stage list");
    let blocks = course_tools::how::blocks(&chapter.text);
    let hows: Vec<_> = blocks.iter().filter(|b| b.class == "lesson-how").collect();
    let inside = |line: usize| hows.iter().any(|h| h.open < line && line < h.close);
    let lone = blocks
        .iter()
        .filter(|b| b.class == "lesson-code" && !inside(b.open))
        .count();
    let first = blocks
        .iter()
        .find(|b| b.class == "lesson-how" || (b.class == "lesson-code" && !inside(b.open)))
        .expect("lesson 1's chapter folds something");
    let opened = chapter
        .listings
        .iter()
        .filter(|l| l.shows_blanked_code() && first.open < l.line && l.line < first.close + 1)
        .count();
    (hows.len() + lone, opened)
}

/// Checks that the page folds exactly the listings that show blanked code,
/// and shows every other.
fn assert_folds_exactly_the_blanked(page: &Page, expected: &[(String, bool)], how: &str) {
    // Each chapter listing is found on the page by its code (the page also
    // has listings from included pages: transcripts, the starter's page).
    let mut on_page: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
    for (code, visible) in &page.listings {
        on_page.entry(code.as_str()).or_default().push(*visible);
    }
    let mut wrong = Vec::new();
    for (code, folded) in expected {
        let first_line = code.lines().next().unwrap_or("");
        match on_page.get(code.as_str()) {
            None => wrong.push(format!(
                "not on the page at all (is docs/book stale? run `mdbook build docs`): {first_line}"
            )),
            Some(visible) if visible.contains(folded) => wrong.push(format!(
                "{}: {first_line}",
                if *folded {
                    "shows blanked code but is not folded"
                } else {
                    "shows no blanked code but is folded"
                }
            )),
            Some(_) => {}
        }
    }
    let chapter_codes: Vec<&str> = expected.iter().map(|(c, _)| c.as_str()).collect();
    for (code, visible) in &page.listings {
        if !visible && !chapter_codes.contains(&code.as_str()) {
            wrong.push(format!(
                "a listing from an included page is hidden: {}",
                code.lines().next().unwrap_or("")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{how}: the listings building mode folds are not exactly those that show code \
         lesson 1's starter blanks (docs/starters/lesson1.toml); `cargo run -p course-tools \
         --bin book-check` says which wrappers to fix, then rebuild the book:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        page.buttons,
        expected_buttons().0,
        "{how}: one visible button per fold: each \"How the lesson does it\", and each \
         listing of the lesson's code outside one"
    );
    assert_eq!(
        page.how_prose.1, 0,
        "{how}: the prose that explains the lesson's code (.lesson-how) is folded in \
         building mode ({} of {} paragraphs visible)",
        page.how_prose.1, page.how_prose.0
    );
    assert!(
        page.contract_probe_visible && page.contracts.0 == page.contracts.1,
        "{how}: the builders' contracts (.building-along) must show in building mode: \
         {:?} of them visible, and a new one visible: {}",
        page.contracts,
        page.contract_probe_visible
    );
    assert!(page.building, "{how}: <html> has the building-mode class");
}

/// Checks that the page reads as the book always has.
fn assert_reading_mode(page: &Page, expected: &[(String, bool)], how: &str) {
    assert!(!page.building, "{how}: <html> must not be in building mode");
    let hidden: Vec<&str> = page
        .listings
        .iter()
        .filter(|(_, visible)| !visible)
        .map(|(code, _)| code.lines().next().unwrap_or(""))
        .collect();
    assert!(
        hidden.is_empty(),
        "{how}: reading mode must show every listing; hidden: {hidden:#?}"
    );
    assert!(
        page.listings.len() >= expected.len(),
        "{how}: the page has {} listings, the chapter {}: is docs/book stale?",
        page.listings.len(),
        expected.len()
    );
    assert_eq!(
        page.folds,
        expected.iter().filter(|(_, f)| *f).count(),
        "{how}: the page's .lesson-code wrappers, against the chapter's listings of blanked \
         code (run `mdbook build docs` if the chapter changed)"
    );
    assert_eq!(
        page.buttons, 0,
        "{how}: no fold button shows in reading mode"
    );
    assert_eq!(
        page.how_prose.1, page.how_prose.0,
        "{how}: reading mode shows every paragraph of the lesson's explanations"
    );
    assert!(
        page.contracts.1 == 0 && !page.contract_probe_visible,
        "{how}: the builders' contracts (.building-along) are hidden in reading mode \
         ({} of {} visible)",
        page.contracts.1,
        page.contracts.0
    );
    assert_eq!(
        page.switch,
        Some(false),
        "{how}: the \"Building along\" switch is in the menu bar, off"
    );
}

/// The browser: the system's Chromium, no sandbox (CI runs as root),
/// nothing fetched from the network, a new empty profile.
fn browser(profile: &Path) -> Browser {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "no browser at {}: install Chromium (`apt-get install -y chromium`) or set CHROMIUM=PATH",
        path.display()
    );
    // Headlessness and the sandbox are the launcher's own options.
    let args: Vec<&OsStr> = course_tools::building::CHROMIUM_OWN_FLAGS
        .iter()
        .map(OsStr::new)
        .collect();
    let options = LaunchOptions::default_builder()
        .path(Some(path))
        .headless(true)
        .sandbox(false)
        .user_data_dir(Some(profile.to_path_buf()))
        .args(args)
        .window_size(Some((1280, 900)))
        .build()
        .expect("launch options");
    Browser::new(options).expect("headless Chromium starts")
}

/// Opens `path` (under the book) on the server at `addr`, and waits for it.
fn open(tab: &Tab, addr: SocketAddr, path: &str) {
    let url = format!("http://{addr}/{path}");
    tab.navigate_to(&url)
        .and_then(|t| t.wait_until_navigated())
        .unwrap_or_else(|e| panic!("open {url}: {e:#}"));
    tab.wait_for_element("#building-along")
        .unwrap_or_else(|e| panic!("{url}: no \"Building along\" switch (#building-along): {e:#}"));
}

#[test]
#[ignore = "needs headless Chromium and the built book: `mdbook build docs`, then `cargo test -p course-tools --test building_mode -- --ignored`"]
fn building_mode_folds_exactly_the_blanked_listings() {
    let book = root().join("docs/book");
    assert!(
        book.join("lesson1.html").is_file(),
        "{} has no lesson1.html: run `mdbook build docs` first",
        book.display()
    );
    let expected = expected_listings();
    let blanked = expected.iter().filter(|(_, f)| *f).count();
    assert!(
        blanked > 0 && blanked < expected.len(),
        "lesson 1 has {blanked} listings of blanked code out of {}: the test needs some of \
         each to tell folding from hiding everything",
        expected.len()
    );

    let server = TestServer::start_handler(
        StaticDir::new(&book).expect("serve docs/book"),
        "127.0.0.1:0".parse().expect("an address"),
    )
    .expect("a server on 127.0.0.1");
    let addr = server.addr();
    let profile = tempfile::tempdir().expect("a new empty profile");
    let browser = browser(profile.path());
    let tab = browser.new_tab().expect("a tab");

    // Reading mode, the default on a first visit.
    open(&tab, addr, "lesson1.html");
    assert_reading_mode(&read(&tab), &expected, "a first visit");

    // The switch, clicked.
    tab.find_element("#building-along")
        .and_then(|e| e.click().map(|_| ()))
        .expect("click the switch");
    assert_folds_exactly_the_blanked(&read(&tab), &expected, "after clicking the switch");

    // The first fold's button shows its listings, and only those, with the
    // prose that explains them.
    let before = read(&tab);
    let hidden_before = before.listings.iter().filter(|(_, v)| !v).count();
    tab.find_element(".lesson-how-toggle, .lesson-code-toggle")
        .and_then(|e| e.click().map(|_| ()))
        .expect("click the first fold's button");
    let after = read(&tab);
    let hidden_after = after.listings.iter().filter(|(_, v)| !v).count();
    let opened = expected_buttons().1;
    assert!(
        opened > 0,
        "the chapter's first fold holds a listing of blanked code"
    );
    assert_eq!(
        hidden_after,
        hidden_before - opened,
        "clicking the first fold's button shows its {opened} listing(s), and no other"
    );
    let first_blanked = expected
        .iter()
        .find(|(_, f)| *f)
        .map(|(c, _)| c.as_str())
        .expect("a blanked listing");
    assert!(
        after
            .listings
            .iter()
            .any(|(code, visible)| code == first_blanked && *visible),
        "the first fold's listing shows after its button is clicked"
    );
    assert!(
        after.how_prose.1 > before.how_prose.1,
        "the first fold's explanation shows with its listing: {:?} then {:?}",
        before.how_prose,
        after.how_prose
    );

    // Remembered on another page, reached without any query.
    open(&tab, addr, "lesson2.html");
    let other = read(&tab);
    assert!(
        other.building && other.switch == Some(true),
        "building mode is remembered on lesson 2's page: {other:?}"
    );
    assert!(
        other.listings.iter().any(|(_, visible)| !visible),
        "lesson 2's page folds its blanked listings too"
    );

    // Back on lesson 1: still building, every fold closed again.
    open(&tab, addr, "lesson1.html");
    assert_folds_exactly_the_blanked(&read(&tab), &expected, "lesson 1 again");

    // `?mode=read` turns it off, and that is remembered too.
    open(&tab, addr, "lesson1.html?mode=read");
    assert_reading_mode(&read(&tab), &expected, "?mode=read");
    open(&tab, addr, "lesson1.html");
    assert_reading_mode(&read(&tab), &expected, "after ?mode=read, a plain visit");

    // `?mode=build` in a link turns it on.
    open(&tab, addr, "lesson1.html?mode=build");
    assert_folds_exactly_the_blanked(&read(&tab), &expected, "?mode=build");
    let page = read(&tab);
    assert_eq!(
        page.switch,
        Some(true),
        "?mode=build: the switch shows it on"
    );

    // Without scripts the book reads as it always has, whatever the link
    // or the stored choice says: nothing folded, no contracts, no switch.
    let plain = browser.new_tab().expect("a second tab");
    plain
        .call_method(Emulation::SetScriptExecutionDisabled { value: true })
        .expect("turn the page's scripts off");
    let url = format!("http://{addr}/lesson1.html?mode=build");
    plain
        .navigate_to(&url)
        .and_then(|t| t.wait_until_navigated())
        .unwrap_or_else(|e| panic!("open {url}: {e:#}"));
    let mut unscripted = read(&plain);
    assert_eq!(
        unscripted.switch, None,
        "without scripts there is no switch"
    );
    // The switch's absence aside, it must read as reading mode does.
    unscripted.switch = Some(false);
    assert_reading_mode(&unscripted, &expected, "scripts off, ?mode=build");
}
