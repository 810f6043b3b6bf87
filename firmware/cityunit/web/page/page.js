// The unit's page: live from /events (server-sent events), in the unit's language.
// The screen reader hears milestones only (the auction's start, 10 s left, the final
// phase, its end, a permit, the hour's end), never every second. No library, no build.
"use strict";

const WORDS = {
  en: {
    live: "live", lost: "reconnecting…", off: "Switch OFF", idle: "Playing", auction: "Auction",
    permit: "Permit", settings: "Settings", hour_end: "Time's up", shutdown: "Shutting down",
    hour: (n) => `Hour ${n}`, paused: "PAUSED", running: "Auction running",
    final: "Final seconds!", left: (s) => `${s} s left`, leftUnit: "s left", sold: "SOLD!", stopped: "STOPPED",
    drawing: "Drawing a permit…", permitTitle: "Build permit", station: "Station",
    buildings: (n) => (n === 1 ? "1 building" : `${n} buildings`), history: "Last permits",
    none: "none yet", over: "GAME OVER", total: "Total your wealth: cash + the rent value of each district you own.",
    played: (n) => `${n} h played`, vibrate: "Vibrate in an auction's final seconds and at the hour's end",
    started: "Auction started", finalSay: "Final seconds",
    refused: "This phone's code is out of date (a new game began, or the unit restarted): scan the code on the unit's screen again (its menu, ON PHONES).",
    switchOn: "SWITCH: ON", switchOff: "SWITCH: OFF", soundOn: "Sound: on", soundOff: "Sound: off",
    ledOn: "LED on", ledOff: "LED off", auctionButton: "AUCTION", buildButton: "BUILD",
  },
  fr: {
    live: "en direct", lost: "reconnexion…", off: "Interrupteur sur OFF", idle: "En jeu", auction: "Enchère",
    permit: "Permis", settings: "Réglages", hour_end: "Temps écoulé", shutdown: "Arrêt",
    hour: (n) => `Heure ${n}`, paused: "EN PAUSE", running: "Enchère en cours",
    final: "Dernières secondes !", left: (s) => `${s} s restantes`, leftUnit: "s restantes", sold: "VENDU !", stopped: "ARRÊTÉ",
    drawing: "Tirage d'un permis…", permitTitle: "Permis de construire", station: "Gare",
    buildings: (n) => (n === 1 ? "1 bâtiment" : `${n} bâtiments`), history: "Derniers permis",
    none: "aucun encore", over: "FIN DE LA PARTIE", total: "Comptez votre richesse : argent + loyer de chaque quartier possédé.",
    played: (n) => `${n} h jouée(s)`, vibrate: "Vibrer dans les dernières secondes d'une enchère et à la fin de l'heure",
    started: "Enchère commencée", finalSay: "Dernières secondes",
    refused: "Le code de ce téléphone n'est plus valable (nouvelle partie, ou l'unité a redémarré) : scannez à nouveau le code sur l'écran de l'unité (menu, SUR MOBILE).",
    switchOn: "INTERRUPTEUR : ON", switchOff: "INTERRUPTEUR : OFF", soundOn: "Son : oui", soundOff: "Son : non",
    ledOn: "LED allumée", ledOff: "LED éteinte", auctionButton: "ENCHÈRE", buildButton: "CONSTRUIRE",
  },
};
const VOLUME = { off: 0, low: 0.04, medium: 0.08, high: 0.15 }; // the gain of a square wave

const $ = (id) => document.getElementById(id);
let words = WORDS.en;
let last = null; // the last state
let tick = null; // the clock's interval, only while a clock runs on the page
let token = null;
let audio = null; // Web Audio, once a tap allowed it: { ctx, osc, gain }
let connected = false;

function keepToken() {
  const match = location.pathname.match(/^\/k\/([A-Z2-7]{8,32})$/i);
  if (match) {
    sessionStorage.setItem("unit-token", match[1].toUpperCase());
    history.replaceState(null, "", "/"); // the code leaves the address bar
  }
  token = sessionStorage.getItem("unit-token");
}

function say(text) {
  $("say").textContent = "";
  setTimeout(() => { $("say").textContent = text; }, 50); // the same words said twice are said
}

function buzz(pattern) {
  if ($("vibrate").checked && navigator.vibrate) navigator.vibrate(pattern);
}

function mmss(ms) {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

function show(id, on) { $(id).hidden = !on; }

function render(state) {
  const before = last;
  last = state;
  words = WORDS[state.language] || WORDS.en;
  document.documentElement.lang = state.language;
  $("link").textContent = connected ? words.live : words.lost;
  $("mode").textContent = state.power ? (words[state.mode] || state.mode) : words.off;
  $("hour").textContent = state.power && state.hour ? words.hour(state.hour) : "";
  show("paused", state.paused && state.power);
  $("paused").textContent = words.paused;
  runClock(state);
  renderAuction(state, before);
  show("sold", state.sold !== null);
  if (state.sold) $("sold-text").textContent = words[state.sold];
  show("permit", state.permit !== null);
  if (state.permit) {
    $("permit-title").textContent = words.permitTitle;
    const value = state.permit.value;
    $("permit-value").textContent = state.permit.drawing ? words.drawing
      : value === "station" ? words.station : words.buildings(value);
  }
  show("over", state.game_over !== null);
  if (state.game_over) {
    $("over-title").textContent = words.over;
    $("over-total").textContent = words.total;
    $("over-played").textContent = words.played(state.game_over.hours_played);
  }
  renderHistory(state.permits);
  $("vibrate-text").textContent = words.vibrate;
  $("auction-button").textContent = words.auctionButton;
  $("build-button").textContent = words.buildButton;
  if ("led" in state) renderUnit(state);
  show("controls", token !== null);
  milestones(before, state);
}

function runClock(state) {
  clearInterval(tick);
  tick = null;
  const clock = $("clock");
  if (!state.power || state.hour_elapsed_ms === null || state.mode === "auction") {
    clock.textContent = "";
    return;
  }
  const since = performance.now();
  const elapsed = () => Math.min(state.hour_ms,
    state.hour_elapsed_ms + (state.running ? performance.now() - since : 0));
  clock.textContent = mmss(elapsed());
  if (state.running) tick = setInterval(() => { clock.textContent = mmss(elapsed()); }, 250);
}

function renderAuction(state, before) {
  const auction = state.auction;
  show("auction", auction !== null);
  if (!auction) return;
  $("auction").classList.toggle("final", auction.phase === "final");
  $("auction-phase").textContent = auction.phase === "final" ? words.final : words.running;
  if (auction.countdown_s !== null) {
    showLeft(auction.countdown_s);
  } else if (auction.phase === "final") { // the final phase is public: counted here
    const wasFinal = before && before.auction && before.auction.phase === "final";
    if (!wasFinal) {
      const end = performance.now() + auction.final_s * 1000;
      const step = () => {
        const left = Math.max(0, Math.ceil((end - performance.now()) / 1000));
        showLeft(left);
        if (left > 0 && last.auction && last.auction.phase === "final") setTimeout(step, 200);
      };
      step();
    }
  } else {
    showLeft(null);
  }
}

function showLeft(seconds) { // the number large, its unit small: it fits 360 px in French
  $("countdown-n").textContent = seconds === null ? "" : String(seconds);
  $("countdown-unit").textContent = seconds === null ? "" : words.leftUnit;
  $("countdown").setAttribute("aria-label", seconds === null ? "" : words.left(seconds));
}

function renderHistory(permits) {
  const list = $("permits");
  list.textContent = "";
  for (const value of permits) {
    const item = document.createElement("li");
    item.textContent = value === "station" ? words.station : String(value);
    list.appendChild(item);
  }
  $("history-title").textContent = words.history;
  $("permits-none").textContent = words.none;
  show("permits-none", permits.length === 0);
}

function milestones(before, state) {
  if (!before) return; // the first state is no news
  const a = state.auction, b = before.auction;
  if (a && !b) say(words.started);
  if (a && a.countdown_s === 10 && (!b || b.countdown_s !== 10)) say(words.left(10));
  if (a && a.phase === "final" && !(b && b.phase === "final")) {
    say(words.finalSay);
    buzz([150, 850, 150, 850, 150, 850, 150, 850, 150]);
  }
  if (state.sold && !before.sold) say(words[state.sold]);
  if (state.permit && !state.permit.drawing && !(before.permit && !before.permit.drawing)) {
    const v = state.permit.value;
    say(`${words.permitTitle}: ${v === "station" ? words.station : words.buildings(v)}`);
  }
  if (state.game_over && !before.game_over) {
    say(`${words.over}. ${words.total}`);
    buzz([600, 200, 600, 200, 600]);
  }
}

function renderUnit(state) {
  show("unit", true);
  const led = $("led");
  led.style.background = `rgba(255, 40, 40, ${0.15 + 0.85 * state.led})`;
  led.style.boxShadow = state.led > 0 ? `0 0 ${8 + 16 * state.led}px rgba(255, 40, 40, ${state.led})` : "none";
  $("led-text").textContent = state.led > 0 ? words.ledOn : words.ledOff;
  const sw = $("switch-button");
  show("switch-button", true);
  sw.setAttribute("aria-pressed", String(state.power));
  sw.textContent = state.power ? words.switchOn : words.switchOff;
  show("sound-button", true);
  $("sound-button").textContent = audio ? words.soundOn : words.soundOff;
  $("sound-button").setAttribute("aria-pressed", String(audio !== null));
  if (audio) {
    const hz = state.tone_hz;
    const now = audio.ctx.currentTime;
    if (hz) audio.osc.frequency.setValueAtTime(hz, now);
    audio.gain.gain.setValueAtTime(hz ? VOLUME[state.volume] : 0, now);
  }
}

let sent = Promise.resolve(); // each press after the one before: an up never overtakes its down

function post(path, body) {
  if (!token) return;
  sent = sent.then(async () => {
    let answer;
    try {
      answer = await fetch(path, {
        method: "POST", headers: { "Content-Type": "application/json", "X-Unit-Token": token },
        body: JSON.stringify(body),
      });
    } catch (e) {
      return; // the link is down: the status above says so
    }
    $("refused").hidden = answer.status !== 403;
    $("refused").textContent = words.refused;
  });
}

function pressable(id, button) {
  const element = $(id);
  let down = false;
  const set = (on) => {
    if (on === down) return;
    down = on;
    element.classList.toggle("down", on);
    post("/press", { button, down: on });
  };
  let handled = false; // a pointer or a key pressed it: the click that follows is theirs
  element.addEventListener("pointerdown", (e) => { e.preventDefault(); handled = true; element.setPointerCapture(e.pointerId); set(true); });
  for (const name of ["pointerup", "pointercancel", "lostpointercapture"]) element.addEventListener(name, () => set(false));
  element.addEventListener("keydown", (e) => { if ((e.key === " " || e.key === "Enter") && !e.repeat) { e.preventDefault(); handled = true; set(true); } });
  element.addEventListener("keyup", (e) => { if (e.key === " " || e.key === "Enter") set(false); });
  // a screen reader, switch access or voice control clicks with no pointer: a tap
  element.addEventListener("click", () => { if (!handled) { set(true); set(false); } handled = false; });
  element.addEventListener("contextmenu", (e) => e.preventDefault()); // a long press is the unit's
}

function startSound() {
  if (audio) {
    audio.ctx.close();
    audio = null;
  } else {
    const ctx = new AudioContext();
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.type = "square";
    gain.gain.value = 0;
    osc.connect(gain).connect(ctx.destination);
    osc.start();
    audio = { ctx, osc, gain };
  }
  if (last) renderUnit(last);
}

function listen() {
  const link = $("link");
  // reconnects by itself, from the last id seen; the token, for the simulator's screen
  const events = new EventSource(token ? `/events?k=${encodeURIComponent(token)}` : "/events");
  events.addEventListener("open", () => { connected = true; link.textContent = words.live; link.className = "link live"; });
  events.addEventListener("error", () => { connected = false; link.textContent = words.lost; link.className = "link lost"; });
  events.addEventListener("state", (e) => render(JSON.parse(e.data)));
  events.addEventListener("frame", (e) => { $("oled").src = JSON.parse(e.data); });
}

keepToken();
pressable("auction-button", "auction");
pressable("build-button", "build");
$("switch-button").addEventListener("click", () => post("/switch", { on: !(last && last.power) }));
$("sound-button").addEventListener("click", startSound);
$("vibrate").checked = localStorage.getItem("unit-vibrate") === "1";
$("vibrate").addEventListener("change", () => localStorage.setItem("unit-vibrate", $("vibrate").checked ? "1" : "0"));
listen();
