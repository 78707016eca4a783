// The book's building mode: for a reader who writes the lesson from its
// starter (`cargo run -p starter -- new lesson1 ~/my-lesson1`) rather than
// reading it.
//
// Every page gets a switch, "Building along", in the menu bar. On, each
// listing of the lesson's code that a starter leaves for the learner to
// write (the chapters wrap those in `<div class="lesson-code">`; book-check
// holds them to the starters' stage lists) is folded behind a button that
// shows it on demand, and the contracts written for builders
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

    // One button per listing of the lesson's code, before it.
    var folds = Array.prototype.slice.call(document.querySelectorAll(".lesson-code"));
    folds.forEach(function (fold, i) {
        var code = fold.querySelector("pre code") || fold.querySelector("pre");
        var lines = code ? code.textContent.replace(/\n$/, "").split("\n").length : 0;
        var button = document.createElement("button");
        button.type = "button";
        button.className = "lesson-code-toggle";
        fold.id = fold.id || "lesson-code-" + (i + 1);
        button.setAttribute("aria-controls", fold.id);
        var shown = "Hide the lesson's code";
        var hidden = "Show the lesson's code (" + lines + (lines === 1 ? " line)" : " lines)");
        function draw(open) {
            fold.classList.toggle("lesson-code-open", open);
            button.setAttribute("aria-expanded", open ? "true" : "false");
            button.textContent = open ? shown : hidden;
        }
        button.addEventListener("click", function () {
            draw(!fold.classList.contains("lesson-code-open"));
        });
        draw(false);
        fold.insertBefore(button, fold.firstChild);
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
