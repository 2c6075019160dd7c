// The review page's keyboard and writes: plain DOM, no framework, no build step.
"use strict";

(function () {
  const status = document.getElementById("status");
  function say(text) {
    status.textContent = text;
  }

  async function send(url, body) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    });
    let data = null;
    if (response.status !== 204) {
      try {
        data = await response.json();
      } catch (e) {
        data = null;
      }
    }
    return { status: response.status, data: data };
  }

  // -- login and logout ---------------------------------------------------------------------
  const login = document.getElementById("login");
  if (login) {
    login.addEventListener("submit", async function (event) {
      event.preventDefault();
      const body = { key: document.getElementById("key").value };
      const reviewer = document.getElementById("reviewer").value.trim();
      if (reviewer) {
        body.reviewer = reviewer;
      }
      const answer = await send("/review/login", body);
      if (answer.status === 204) {
        window.location.assign(login.dataset.next || "/review");
      } else {
        const message = answer.data && answer.data.message ? answer.data.message : "login failed";
        document.getElementById("login-error").textContent = message;
      }
    });
  }
  const logout = document.getElementById("logout");
  if (logout) {
    logout.addEventListener("click", async function () {
      await send("/review/logout", {});
      window.location.assign("/review/login");
    });
  }

  // -- the review page ------------------------------------------------------------------------
  const root = document.getElementById("review");
  if (!root) {
    return;
  }
  const job = root.dataset.job;
  const items = Array.from(root.querySelectorAll(".item"));
  const help = document.getElementById("help");
  const addForm = document.getElementById("add-form");
  const undoStack = [];
  let current = null;

  function focusItem(item) {
    if (!item) {
      return;
    }
    if (current) {
      current.tabIndex = -1;
      current.classList.remove("current");
    }
    current = item;
    item.tabIndex = 0;
    item.classList.add("current");
    item.focus();
  }

  function move(step) {
    const at = current ? items.indexOf(current) : -1;
    // Past either end of the page: the next or previous page of the job.
    const beyond = document.getElementById(step > 0 ? "next-page" : "prev-page");
    if (beyond && ((step > 0 && at === items.length - 1) || (step < 0 && at === 0))) {
      window.location.assign(beyond.href);
      return;
    }
    const next = items[Math.min(items.length - 1, Math.max(0, at + step))];
    focusItem(next);
  }

  function unreviewedAfter(item) {
    const at = item ? items.indexOf(item) : -1;
    for (let i = 1; i <= items.length; i++) {
      const candidate = items[(at + i) % items.length];
      if (!candidate.dataset.mine || candidate.dataset.stale) {
        return candidate;
      }
    }
    return null;
  }

  function progress() {
    const done = Number(root.dataset.doneElsewhere || 0) + items.filter(function (i) {
      return i.dataset.mine && !i.dataset.stale;
    }).length;
    document.getElementById("done").textContent = String(done);
    const bar = document.getElementById("progress");
    bar.value = done;
    bar.textContent = done + " / " + root.dataset.total;
    return done;
  }

  function render(item, view) {
    item.dataset.version = String(view.version);
    item.dataset.name = view.name;
    item.dataset.mine = view.mine || "";
    item.dataset.label = view.my_label || "";
    item.dataset.stale = view.my_vote_stale ? "yes" : "";
    item.querySelector(".name").textContent = view.name;
    item.querySelector(".proposed").textContent =
      view.name !== view.proposed ? "(proposed: " + view.proposed + ")" : "";
    let votes = view.accepts + " accept · " + view.rejects + " reject";
    if (view.stale_votes) {
      votes += " · " + view.stale_votes + " stale";
    }
    item.querySelector(".votes").textContent = votes;
    let mine = "Not reviewed by you";
    if (view.mine) {
      mine = "You: " + view.mine + (view.my_label ? " (" + view.my_label + ")" : "");
      if (view.my_vote_stale) {
        mine += ", on an older name";
      }
    }
    item.querySelector(".mine").textContent = mine;
    progress();
  }

  function snapshot(item) {
    return {
      name: item.dataset.name,
      mine: item.dataset.mine,
      label: item.dataset.label || null,
    };
  }

  async function act(item, body, remember) {
    const before = snapshot(item);
    body.version = Number(item.dataset.version);
    const answer = await send("/review/jobs/" + job + "/items/" + item.dataset.id, body);
    if (answer.status === 200) {
      if (remember) {
        undoStack.push({ item: item, before: before });
      }
      render(item, answer.data);
      say(item.dataset.name + ": " + (answer.data.mine || "cleared"));
      return true;
    }
    if (answer.status === 409 && answer.data && answer.data.item) {
      render(item, answer.data.item);
      say("Conflict: " + answer.data.message);
      item.classList.add("conflict");
      focusItem(item);
      return false;
    }
    say("Error " + answer.status + ": " + (answer.data && answer.data.message ? answer.data.message : ""));
    return false;
  }

  async function decide(body) {
    if (!current) {
      return;
    }
    const item = current;
    if (await act(item, body, true)) {
      focusItem(unreviewedAfter(item) || item); // auto-advance
    }
  }

  async function undo() {
    const last = undoStack.pop();
    if (!last) {
      say("Nothing to undo");
      return;
    }
    const item = last.item;
    const before = last.before;
    if (before.name !== item.dataset.name) {
      await act(item, { action: "rename", name: before.name }, false);
    }
    if (!before.mine) {
      await act(item, { action: "clear" }, false);
    } else if (before.label) {
      await act(item, { action: "label", label: before.label }, false);
    } else {
      await act(item, { action: before.mine }, false);
    }
    focusItem(item);
    say("Undone: " + item.dataset.name);
  }

  function edit() {
    if (!current) {
      return;
    }
    const item = current;
    const name = item.querySelector(".name");
    const input = document.createElement("input");
    input.type = "text";
    input.value = item.dataset.name;
    input.setAttribute("aria-label", "New name (Enter saves, Escape cancels)");
    input.className = "edit";
    name.replaceChildren(input);
    input.focus();
    input.select();
    input.addEventListener("keydown", async function (event) {
      event.stopPropagation();
      if (event.key === "Enter") {
        event.preventDefault();
        const value = input.value.trim();
        name.textContent = item.dataset.name;
        if (value && (await act(item, { action: "rename", name: value }, true))) {
          focusItem(unreviewedAfter(item) || item);
        } else {
          focusItem(item);
        }
      } else if (event.key === "Escape") {
        name.textContent = item.dataset.name;
        focusItem(item);
      }
    });
  }

  function openAdd() {
    if (!current) {
      return;
    }
    const section = current.closest(".column");
    addForm.dataset.position = section.dataset.position;
    addForm.dataset.target = section.dataset.target;
    addForm.dataset.item = current.id;
    document.getElementById("add-target").textContent = section.dataset.target;
    document.getElementById("add-kind").value = current.dataset.kind;
    addForm.hidden = false;
    const input = document.getElementById("add-name");
    input.value = "";
    input.focus();
  }

  function closeAdd() {
    addForm.hidden = true;
    focusItem(document.getElementById(addForm.dataset.item) || current);
  }

  addForm.addEventListener("keydown", function (event) {
    event.stopPropagation();
    if (event.key === "Escape") {
      closeAdd();
    }
  });
  document.getElementById("add-cancel").addEventListener("click", closeAdd);
  addForm.addEventListener("submit", async function (event) {
    event.preventDefault();
    const answer = await send("/review/jobs/" + job + "/names", {
      position: Number(addForm.dataset.position),
      target: addForm.dataset.target,
      kind: document.getElementById("add-kind").value,
      name: document.getElementById("add-name").value,
    });
    if (answer.status === 201) {
      // A new name is a new item: the server renders it with the rest (resume keeps the place).
      say("Added " + answer.data.name);
      const url = new URL(window.location.href);
      url.searchParams.set("page", root.dataset.page);
      url.hash = "item-" + answer.data.id;
      const here = new URL(window.location.href);
      here.hash = url.hash;
      if (here.toString() === url.toString()) {
        window.location.hash = url.hash; // same page: a new hash, then a reload
        window.location.reload();
      } else {
        window.location.assign(url.toString());
      }
    } else {
      say("Error " + answer.status + ": " + (answer.data && answer.data.message ? answer.data.message : ""));
    }
  });

  function toggleHelp(show) {
    help.hidden = !show;
    if (show) {
      help.focus();
    } else {
      focusItem(current);
    }
  }
  document.getElementById("help-open").addEventListener("click", function () {
    toggleHelp(true);
  });
  document.getElementById("help-close").addEventListener("click", function () {
    toggleHelp(false);
  });

  const ACTIONS = {
    accept: function () { return decide({ action: "accept" }); },
    reject: function () { return decide({ action: "reject" }); },
    equivalent: function () { return decide({ action: "label", label: "equivalent" }); },
    associated: function () { return decide({ action: "label", label: "associated" }); },
    neither: function () { return decide({ action: "label", label: "neither" }); },
    clear: function () { return current && act(current, { action: "clear" }, true); },
    edit: edit,
    add: openAdd,
    undo: undo,
  };
  const KEYS = {
    a: "accept", r: "reject", "1": "equivalent", "2": "associated", "3": "neither",
    c: "clear", e: "edit", n: "add", u: "undo",
  };

  document.querySelectorAll(".toolbar button").forEach(function (button) {
    button.addEventListener("click", function () {
      ACTIONS[button.dataset.act]();
    });
  });
  items.forEach(function (item) {
    item.addEventListener("click", function () {
      focusItem(item);
    });
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    if (!help.hidden) {
      if (event.key === "Escape" || event.key === "?") {
        event.preventDefault();
        toggleHelp(false);
      } else if (event.key === "Tab") {
        // A modal dialog keeps the focus: its one control, Close.
        event.preventDefault();
        document.getElementById("help-close").focus();
      }
      return;
    }
    if (typing) {
      return;
    }
    const key = event.key;
    if (key === "?") {
      event.preventDefault();
      toggleHelp(true);
    } else if (key === "j" || key === "ArrowDown") {
      event.preventDefault();
      move(1);
    } else if (key === "k" || key === "ArrowUp") {
      event.preventDefault();
      move(-1);
    } else if (key === "g") {
      event.preventDefault();
      const next = unreviewedAfter(current);
      if (next) {
        focusItem(next);
      } else if (progress() < Number(root.dataset.total)) {
        // Nothing left here but elsewhere: the server opens the page where that is.
        window.location.assign("?order=" + root.dataset.order);
      }
    } else if (key === "o") {
      event.preventDefault();
      const url = new URL(window.location.href);
      url.searchParams.set("order", url.searchParams.get("order") === "margin" ? "table" : "margin");
      window.location.assign(url.toString());
    } else if (KEYS[key] && current && (event.target === current || event.target === document.body || event.target.closest(".toolbar") || event.target.id === "main")) {
      event.preventDefault();
      ACTIONS[KEYS[key]]();
    }
  });

  // Resume where one left off: the item in the URL, else the first one not reviewed yet.
  progress();
  const hash = window.location.hash.slice(1);
  const linked = hash === "last" ? items[items.length - 1] : hash ? document.getElementById(hash) : null;
  focusItem(linked && linked.classList.contains("item") ? linked : unreviewedAfter(null) || items[0]);
})();
