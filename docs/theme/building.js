// The book's building mode: for a reader who writes the lesson from its
// starter (`cargo run -p starter -- new lesson1 ~/my-lesson1`) rather than
// reading it.
//
// Every page gets a switch, "Building along", in the menu bar. On, each
// listing of the lesson's code that a starter leaves for the learner to
// write (the chapters wrap those in `<div class="lesson-code">`; book-check
// holds them to the starters' stage lists) is folded behind a button that
// shows it on demand, the prose that explains how the lesson's code does its
// job (`<div class="lesson-how">`, the listings included) is folded the same
// way behind "How the lesson does it", and the contracts written for builders
// (`<div class="building-along">`) are shown. Off, the book reads as it
// always has.
//
// The choice is remembered across pages and visits (localStorage), and a
// link can carry it: `?mode=build` turns it on, `?mode=read` off. head.hbs
// sets the mode before the page is drawn; this file adds the switch and the
// folds' buttons, which need the page's body.
(function () {
    "use strict";

    var KEY = "crawler-course.building-mode";
    var ON = "building-mode";
    var root = document.documentElement;

    function remembered() {
        try {
            return window.localStorage.getItem(KEY) === "on";
        } catch (e) {
            return false; // storage refused (private window, file policy)
        }
    }

    function remember(on) {
        try {
            window.localStorage.setItem(KEY, on ? "on" : "off");
        } catch (e) {
            // Not remembered, but still switched for this page.
        }
    }

    // A link's `?mode=` wins, and is remembered, so that the next page,
    // reached by the book's own links (which carry no query), agrees.
    var asked = new URLSearchParams(window.location.search).get("mode");
    if (asked === "build" || asked === "read") {
        remember(asked === "build");
    }
    var on = asked === "build" || (asked !== "read" && remembered());

    // The switch, in the menu bar's right-hand buttons (mdBook 0.4 and 0.5
    // both have them), else at the start of the page.
    var label = document.createElement("label");
    label.className = "building-switch";
    label.title =
        "Building the lesson yourself from its starter? Fold the lesson's code, " +
        "and show what each function you write must do.";
    var box = document.createElement("input");
    box.type = "checkbox";
    box.id = "building-along";
    label.appendChild(box);
    var word = document.createElement("span");
    word.textContent = "Building";
    var more = document.createElement("span");
    more.className = "building-switch-long";
    more.textContent = " along";
    label.appendChild(word);
    label.appendChild(more);
    var bar = document.querySelector(".menu-bar .right-buttons") ||
        document.querySelector(".menu-bar");
    if (bar) {
        bar.insertBefore(label, bar.firstChild);
    } else {
        document.body.insertBefore(label, document.body.firstChild);
    }

    function codeLines(pre) {
        return pre.textContent.replace(/\n$/, "").split("\n").length;
    }

    function plural(n, one, many) {
        return n + " " + (n === 1 ? one : many);
    }

    // One button before each fold: `kind` is the fold's class, `what` the
    // button's words for its two states.
    function foldWith(fold, i, kind, what) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = kind + "-toggle";
        fold.id = fold.id || kind + "-" + (i + 1);
        button.setAttribute("aria-controls", fold.id);
        function draw(open) {
            fold.classList.toggle(kind + "-open", open);
            button.setAttribute("aria-expanded", open ? "true" : "false");
            button.textContent = open ? what.shown : what.hidden;
        }
        button.addEventListener("click", function () {
            draw(!fold.classList.contains(kind + "-open"));
        });
        draw(false);
        fold.insertBefore(button, fold.firstChild);
    }

    // How the lesson does it: a section's listings and the prose that
    // explains them, one fold, for after the learner's own attempt passes.
    var hows = Array.prototype.slice.call(document.querySelectorAll(".lesson-how"));
    hows.forEach(function (how, i) {
        var listings = how.querySelectorAll(".lesson-code pre code, .lesson-code pre");
        var lines = 0;
        Array.prototype.forEach.call(how.querySelectorAll(".lesson-code"), function (fold) {
            var pre = fold.querySelector("pre code") || fold.querySelector("pre");
            lines += pre ? codeLines(pre) : 0;
        });
        var words = how.textContent.split(/\s+/).filter(Boolean).length;
        var size = listings.length ?
            plural(lines, "line", "lines") + " of code and its explanation" :
            plural(words, "word", "words");
        foldWith(how, i, "lesson-how", {
            shown: "Hide how the lesson does it",
            hidden: "How the lesson does it (" + size + ") \u2014 after your own attempt passes",
        });
    });

    // A listing of the lesson's code outside such a fold gets a button of
    // its own; inside one, it opens with its explanation.
    var folds = Array.prototype.slice.call(document.querySelectorAll(".lesson-code"));
    folds.forEach(function (fold, i) {
        if (fold.closest(".lesson-how")) {
            fold.classList.add("lesson-code-open");
            return;
        }
        var pre = fold.querySelector("pre code") || fold.querySelector("pre");
        var lines = pre ? codeLines(pre) : 0;
        foldWith(fold, i, "lesson-code", {
            shown: "Hide the lesson's code",
            hidden: "Show the lesson's code (" + plural(lines, "line)", "lines)"),
        });
    });

    function apply(building) {
        root.classList.toggle(ON, building);
        box.checked = building;
    }

    box.addEventListener("change", function () {
        remember(box.checked);
        apply(box.checked);
    });

    // Another tab of the book switched: follow it.
    window.addEventListener("storage", function (event) {
        if (event.key === KEY) {
            apply(event.newValue === "on");
        }
    });

    apply(on);
})();
