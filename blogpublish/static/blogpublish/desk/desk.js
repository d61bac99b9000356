/* The writer's desk on the article form (blogpublish/admin.py, docs/writing.md).
 *
 * Puts the preview and the Markdown help beside the body's text area, asks the server
 * for the rendered page as the writer types (debounced, one request at a time; the
 * server renders with the site's own renderer, sanitiser and templates and saves
 * nothing), and uploads images, inserting their Markdown at the cursor.
 * No inline script and no eval: the admin can run under a CSP of script-src 'self'.
 */
(function () {
  "use strict";

  const DEBOUNCE_MS = 400;
  const AUTOSAVE_MS = 2000; // after typing stops
  // The form's fields the page shows (the reader fields too: the preview shows the
  // byline, tags, description and language as readers will): each change refreshes it.
  const PREVIEWED = [
    "title", "slug", "body", "publish_at_0", "publish_at_1",
    "description", "language", "byline", "tags",
  ];

  function start() {
    const panel = document.getElementById("desk-panel");
    // The article's form, or a story's draft (desk/drafts.py): the same fields.
    const form = document.getElementById("article_form") || document.getElementById("story_form");
    const body = document.getElementById("id_body");
    if (!panel || !form || !body) {
      return;
    }
    const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
    layout(panel, body);
    tabs(panel);
    const refresh = previewer(panel, form, csrf);
    uploader(body, csrf, panel.dataset.imageUrl, refresh);
    for (const name of PREVIEWED) {
      const field = document.getElementById("id_" + name);
      if (field) {
        field.addEventListener("input", refresh);
        field.addEventListener("change", refresh);
      }
    }
    refresh();
    tagCompleter(document.getElementById("id_tags"), document.getElementById("desk-tags"));
    if (panel.dataset.autosaveUrl) {
      autosaver(form, csrf, panel);
    }
  }

  // The tags field ("python, web, 数据库") completes its last tag from the tags in use
  // (the datalist the server wrote, most used first): the list's options are the text
  // before the last tag followed by each tag that begins with what is typed of it, and
  // not already in the field, so the browser's own suggestions complete one tag. The
  // field is read as the server reads it (publishing.reader_fields: CSV, a tag with a
  // comma in it in double quotes), and a tag is written as tags_text writes it.
  const TAG_SUGGESTIONS = 20;

  // The field's text as its tags: those before the last, and where the last begins
  // and what of it is typed (its text, an open quote's too). As Python's csv reads a
  // line with skipinitialspace: spaces before a tag skipped, a tag that begins with a
  // quote quoted until the next lone quote ("" a quote in it), then taken as it is up
  // to the comma; a quote elsewhere is a quote.
  function tagsOf(text) {
    const done = [];
    let at = 0;
    for (;;) {
      const start = at;
      while (text[at] === " ") {
        at += 1;
      }
      let tag = "";
      if (text[at] === '"') {
        at += 1;
        for (;;) {
          const quote = text.indexOf('"', at);
          if (quote < 0) { // still open: the rest is the tag typed so far
            return {done, start, typed: tag + text.slice(at)};
          }
          tag += text.slice(at, quote);
          at = quote + 1;
          if (text[at] !== '"') {
            break;
          }
          tag += '"';
          at += 1;
        }
      }
      const comma = text.indexOf(",", at);
      if (comma < 0) {
        return {done, start, typed: tag + text.slice(at)};
      }
      done.push(tag + text.slice(at, comma));
      at = comma + 1;
    }
  }

  // A tag as the field holds it: quoted when it has a comma or begins with a quote.
  function tagText(name) {
    if (name.includes(",") || name.startsWith('"')) {
      return '"' + name.replaceAll('"', '""') + '"';
    }
    return name;
  }

  function tagCompleter(field, list) {
    if (!field || !list) {
      return;
    }
    const names = Array.from(list.options, (option) => option.value);
    const key = (text) => text.normalize("NFKC").toLowerCase().trim();
    field.setAttribute("list", list.id);
    field.setAttribute("autocomplete", "off");
    function suggest() {
      const {done, start, typed} = tagsOf(field.value);
      const before = start === 0 ? "" : field.value.slice(0, start).trimEnd() + " ";
      const have = new Set(done.map(key));
      const found = names
        .filter((name) => key(name).startsWith(key(typed)) && !have.has(key(name)))
        .slice(0, TAG_SUGGESTIONS);
      list.replaceChildren(
        ...found.map((name) => {
          const option = document.createElement("option");
          option.value = before + tagText(name);
          return option;
        })
      );
    }
    field.addEventListener("input", suggest);
    field.addEventListener("focus", suggest);
  }

  // A story's draft saves itself (desk/drafts.py: autosave_view) a few seconds after
  // typing stops, when the tab is hidden, and when the page is left; it never
  // publishes. Another tab's save since ours stops it with a warning (409).
  function autosaver(form, csrf, panel) {
    const status = document.getElementById("desk-autosave");
    const version = form.elements.namedItem("base_version");
    let storyId = panel.dataset.storyId || "";
    let timer = null;
    let dirty = false;
    let busy = false;
    let stopped = false;
    let leaving = false; // the form's own save was sent: the page goes with it
    let state = "";
    let inflight = Promise.resolve(); // the autosave on its way, if one is

    function say(text, now) {
      state = now;
      if (status) {
        status.textContent = text;
        status.dataset.state = now;
      }
    }

    function data() {
      const fields = new FormData(form);
      fields.set("story_id", storyId);
      fields.delete("_publish");
      return fields;
    }

    async function save() {
      clearTimeout(timer);
      if (!dirty || busy || stopped) {
        return;
      }
      busy = true;
      dirty = false;
      let landed;
      inflight = new Promise((resolve) => {
        landed = resolve;
      });
      try {
        const response = await fetch(panel.dataset.autosaveUrl, {
          method: "POST",
          body: data(),
          headers: {"X-CSRFToken": csrf, "Accept": "application/json"},
          credentials: "same-origin",
          // Signed out (the session ended, a Log out in another tab), the admin sends
          // the login page: followed, it was a 200, and the desk said "Draft saved"
          // over text saved nowhere (a review's finding).
          redirect: "manual",
        });
        const answer = await response.json().catch(() => ({}));
        if (response.type === "opaqueredirect" || response.status === 0) {
          say(
            "Not saved: you are signed out (the session ended). Copy your text, sign in " +
              "again in another tab, then reload this page and paste it back.",
            "error"
          );
        } else if (response.ok && !Number.isInteger(answer.version)) {
          dirty = true;
          say("Not saved yet: the server's answer was not a saved draft.", "error");
        } else if (response.ok) {
          storyId = String(answer.id);
          version.value = answer.version;
          if (window.location.pathname !== answer.change_url) {
            // A new story has its page now: Save draft goes there too.
            window.history.replaceState(null, "", answer.change_url);
            form.action = answer.change_url;
          }
          say("Draft saved at " + new Date().toLocaleTimeString() + ".", "saved");
        } else if (response.status === 409) {
          stopped = true;
          say(answer.error || "Saved elsewhere since; not saved here.", "conflict");
        } else {
          dirty = dirty || response.status >= 500 || response.status === 429;
          say("Not saved yet: " + (answer.error || response.status), "error");
        }
      } catch (error) {
        dirty = true;
        say("Not saved yet: the server did not answer.", "error");
      } finally {
        busy = false;
        landed();
        if (dirty && !stopped) {
          timer = setTimeout(save, AUTOSAVE_MS);
        }
      }
    }

    form.addEventListener("input", function () {
      if (stopped) {
        return;
      }
      dirty = true;
      say("Unsaved changes…", "dirty");
      clearTimeout(timer);
      timer = setTimeout(save, AUTOSAVE_MS);
    });
    form.addEventListener("submit", function (event) {
      if (busy) {
        // An autosave is on its way (a new story's first one makes the story): the
        // form's save waits for it and goes to the story it made, with its version,
        // instead of making a second story or meeting a conflict.
        event.preventDefault();
        const submitter = event.submitter;
        clearTimeout(timer);
        inflight.then(function () {
          form.requestSubmit(submitter);
        });
        return;
      }
      stopped = true; // the form's own save follows
      leaving = true;
    });
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "hidden") {
        save();
      }
    });
    // The text not saved yet goes in a beacon as the page goes, when it fits one. With
    // an autosave on its way too, the two name the same version: the first to arrive
    // is saved, and the other is refused (409, unseen), unless it is the same text.
    window.addEventListener("pagehide", function () {
      // Not for a story the autosave on its way is creating: with no id yet, the beacon
      // made a second story beside it (a review of the mend); the browser asked first.
      if ((dirty || busy) && !stopped && !(busy && !storyId)) {
        navigator.sendBeacon(panel.dataset.autosaveUrl, data());
      }
    });
    // What may be saved nowhere once the tab is closed: an autosave on its way (a slow
    // upload is cut off with the page, and the text is in no beacon the browser can
    // refuse for its size), text too large for a beacon, and text the last autosave
    // could not save (an error, another tab's save since). The browser asks before the
    // tab closes, as it does for any form with unsaved text (a review's findings).
    window.addEventListener("beforeunload", function (event) {
      const unsent = !stopped && (busy || (dirty && !fitsBeacon(data())));
      const unsaved = unsent || state === "error" || state === "conflict";
      if (unsaved && !leaving) {
        event.preventDefault();
        event.returnValue = "Your text is not saved.";  // older browsers ask only with a text
      }
    });
    // Restore, Withdraw, Share: the other form's buttons. Text typed and not saved
    // yet is saved first, so it is a version in the history the action starts from;
    // it was thrown away (a review's finding). If it cannot be saved, nothing is done.
    const actions = document.getElementById("desk-story-actions");
    if (actions) {
      actions.addEventListener("submit", function (event) {
        if (stopped || !(dirty || busy)) {
          return;
        }
        event.preventDefault();
        const submitter = event.submitter;
        clearTimeout(timer);
        inflight
          .then(save)
          .then(() => inflight)
          .then(function () {
            if (dirty || state !== "saved") {
              say("Not done: your text could not be saved first. " + (status ? status.textContent : ""), "error");
              return;
            }
            actions.requestSubmit(submitter);
          });
      });
    }
  }

  // A beacon's body, with every other keepalive request of the page, may be at most
  // 64 KiB (the Fetch standard's keepalive quota; sendBeacon returns false past it),
  // and a body may be 1 MiB: the form's size, with room for its multipart headers.
  const BEACON_MAX_BYTES = 60 * 1024;

  function fitsBeacon(fields) {
    const encoder = new TextEncoder();
    let size = 0;
    for (const [name, value] of fields) {
      size += 200 + encoder.encode(name).length;
      // As the form is sent (multipart): each line break a CR LF. Counted as typed,
      // text of many short lines passed for one that fits and the browser refused the
      // beacon unsaid (a review of the mend).
      size += typeof value === "string"
        ? encoder.encode(value.replace(/\r?\n|\r/g, "\r\n")).length
        : value.size;
    }
    return size <= BEACON_MAX_BYTES;
  }

  // The body's row becomes two columns: the editor (with Add image) and the panel.
  function layout(panel, body) {
    const desk = document.createElement("div");
    desk.className = "desk";
    const editor = document.createElement("div");
    editor.className = "desk-editor";
    body.parentNode.insertBefore(desk, body);
    editor.appendChild(body);
    const images = document.getElementById("desk-images");
    if (images) {
      images.hidden = false;
      editor.appendChild(images);
    }
    desk.appendChild(editor);
    desk.appendChild(panel);
    panel.hidden = false;
    const row = desk.closest(".form-row");
    if (row) {
      row.classList.add("desk-row");
    }
  }

  function tabs(panel) {
    const buttons = panel.querySelectorAll(".desk-tab");
    for (const button of buttons) {
      button.addEventListener("click", function () {
        for (const other of buttons) {
          const selected = other === button;
          other.setAttribute("aria-selected", String(selected));
          document.getElementById(other.dataset.tab).hidden = !selected;
        }
      });
    }
  }

  // Returns the function that asks for a new preview (debounced; a change made while a
  // request runs is sent when it ends, so the last text always gets its preview).
  function previewer(panel, form, csrf) {
    const frame = document.getElementById("desk-frame");
    const status = document.getElementById("desk-status");
    const problems = document.getElementById("desk-problems");
    let timer = null;
    let running = false;
    let again = false;

    function fields() {
      const data = new URLSearchParams();
      for (const name of PREVIEWED) {
        const field = form.elements.namedItem(name);
        if (field) {
          data.append(name, field.value);
        }
      }
      if (form.id === "story_form") {
        data.append("draft", "1"); // an empty date: when published
      }
      // The article the page is of (a story's is its article's id): its neighbours and
      // related articles leave it out, as its published page does.
      data.append("article_id", panel.dataset.objectId || "");
      data.append("csrfmiddlewaretoken", csrf);
      return data;
    }

    function show(list) {
      problems.replaceChildren();
      for (const text of list) {
        const item = document.createElement("li");
        item.textContent = text;
        problems.appendChild(item);
      }
      problems.hidden = list.length === 0;
    }

    async function send() {
      if (running) {
        again = true;
        return;
      }
      running = true;
      status.textContent = "Updating the preview…";
      try {
        const response = await fetch(panel.dataset.previewUrl, {
          method: "POST",
          body: fields(),
          headers: {"X-CSRFToken": csrf, "Accept": "application/json"},
          credentials: "same-origin",
        });
        if (response.status === 429 || response.status === 503) {
          // The preview's limits (docs/writing.md): try again when the server says.
          const wait = Math.max(1, parseInt(response.headers.get("Retry-After"), 10) || 5);
          const answer = await response.json().catch(() => ({}));
          status.textContent = (answer.error || "The preview is paused.") +
            " Next try in " + wait + " s.";
          status.dataset.state = "waiting";
          clearTimeout(timer);
          timer = setTimeout(send, wait * 1000);
          again = false; // the timer sends the latest text
          return;
        }
        if (!response.ok) {
          const refused = await response.json().catch(() => ({}));
          throw new Error(refused.error || "the server answered " + response.status);
        }
        const answer = await response.json();
        show(answer.problems);
        if (answer.html) {
          frame.srcdoc = answer.html;
        }
        status.textContent = answer.problems.length
          ? "Preview: publishing would refuse this, see below."
          : "Preview: as the site will show it. Nothing is saved or published.";
        status.dataset.state = "ready";
      } catch (error) {
        status.textContent = "The preview could not be updated (" + error.message + ").";
        status.dataset.state = "error";
      } finally {
        running = false;
        if (again) {
          again = false;
          send();
        }
      }
    }

    return function () {
      clearTimeout(timer);
      timer = setTimeout(send, DEBOUNCE_MS);
    };
  }

  function uploader(body, csrf, url, refresh) {
    const input = document.getElementById("desk-image-input");
    const error = document.getElementById("desk-image-error");
    if (!input) {
      return;
    }
    input.addEventListener("change", async function () {
      const file = input.files[0];
      if (!file) {
        return;
      }
      error.hidden = true;
      const data = new FormData();
      data.append("image", file);
      data.append("csrfmiddlewaretoken", csrf);
      try {
        const response = await fetch(url, {
          method: "POST",
          body: data,
          headers: {"X-CSRFToken": csrf, "Accept": "application/json"},
          credentials: "same-origin",
        });
        // The site answers in JSON; a proxy in front of it may not (nginx refuses a body
        // over 1 MiB with a page of its own: docs/writing.md).
        const answer = await response.json().catch(() => null);
        if (!response.ok) {
          if (answer && answer.error) {
            throw new Error(answer.error);
          }
          throw new Error(response.status === 413
            ? "the image is larger than the server in front of the site accepts (413)"
            : "the server answered " + response.status);
        }
        if (!answer || !answer.markdown) {
          throw new Error("the server's answer was not the site's (" + response.status + ")");
        }
        insert(body, answer.markdown);
        refresh();
      } catch (failure) {
        error.textContent = "Not added: " + failure.message;
        error.hidden = false;
      } finally {
        input.value = "";
      }
    });
  }

  // The Markdown at the cursor, on a line of its own.
  function insert(body, markdown) {
    const start = body.selectionStart;
    const end = body.selectionEnd;
    const before = body.value.slice(0, start);
    const lead = before === "" || before.endsWith("\n\n") ? "" : before.endsWith("\n") ? "\n" : "\n\n";
    body.setRangeText(lead + markdown + "\n\n", start, end, "end");
    body.focus();
    body.dispatchEvent(new Event("input", {bubbles: true}));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
