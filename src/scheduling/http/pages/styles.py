"""The one stylesheet, served at /static/app.css (no inline styles, so the CSP stays strict)."""

STYLES = """
:root { color-scheme: light; --ink: #1b1b1f; --muted: #4a4a55; --line: #c9c9d2; --accent: #0b57d0;
        --bad: #a50e0e; --good: #146c2e; --bg: #ffffff; --soft: #f3f4f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: var(--bg); }
.skip { position: absolute; left: -999px; top: 0; padding: .5rem 1rem; background: var(--ink); color: #fff; }
.skip:focus { left: 1rem; }
.top { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; padding: .75rem 1.5rem;
       border-bottom: 1px solid var(--line); background: var(--soft); }
.top p { margin: 0; }
.brand { font-weight: 700; } .brand span { font-weight: 400; color: var(--muted); }
main { max-width: 52rem; padding: 1.5rem; }
h1 { font-size: 1.6rem; margin-top: 0; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; margin: 0 0 .5rem; }
dl.facts, .schedule dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0 0 .75rem; }
dt { font-weight: 600; } dd { margin: 0; }
code { font-family: ui-monospace, monospace; font-size: .95em; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 1rem; padding: .75rem 1rem; }
legend { font-weight: 600; padding: 0 .25rem; }
.field { margin: 0 0 1rem; } .field label { display: block; font-weight: 600; }
.hint { margin: .1rem 0 .35rem; color: var(--muted); font-size: .92rem; }
input[type=text], input[type=datetime-local] { font: inherit; padding: .4rem .5rem; border: 1px solid #6e6e78;
       border-radius: 4px; min-width: 16rem; }
input[aria-invalid=true] { border: 2px solid var(--bad); }
.choice { display: flex; gap: .5rem; align-items: center; margin: .2rem 0; }
button { font: inherit; padding: .45rem 1rem; border-radius: 4px; border: 1px solid var(--accent);
         background: var(--accent); color: #fff; cursor: pointer; }
a.button { display: inline-block; font: inherit; padding: .35rem .9rem; border-radius: 4px; text-decoration: none; }
a.button.cancel { background: #fff; color: var(--bad); border: 1px solid var(--bad); }
a.button.cancel:hover { text-decoration: underline; }
button.danger { background: var(--bad); border-color: var(--bad); }
.support { color: var(--muted); font-size: .85rem; margin: .5rem 0 0; }
.schedule .support { margin: .25rem 0 0; }
.attempts .support { margin: 0; }
.hint.replaces { margin: 0 0 .4rem 1.9rem; color: #6b4100; }
.retries { display: flex; flex-wrap: wrap; gap: .5rem; margin: .5rem 0; }
.retries form { margin: 0; }
.retries button { background: #fff; color: var(--accent); }
.confirm .inline { gap: 1rem; }
details.history { border-top: 1px solid var(--line); margin: 1rem 0; padding-top: .5rem; }
details.history > summary { cursor: pointer; font-weight: 600; padding: .25rem 0; }
details.history[open] > summary { margin-bottom: .75rem; }
details.history .schedule { background: var(--soft); }
.status.is-late { color: #6b4100; }
.confirm form { margin: 1rem 0; }
:focus-visible { outline: 3px solid #e37400; outline-offset: 2px; }
/* Text-entry fields keep the ring while focus is on a part of them, e.g. the date picker button. */
input[type=text]:focus, input[type=datetime-local]:focus-within { outline: 3px solid #e37400; outline-offset: 2px; }
.problem { border-left: 4px solid var(--bad); background: #fdecec; padding: .5rem 1rem; margin: 0 0 1rem; }
.notice { border-left: 4px solid var(--good); background: #e9f6ec; padding: .5rem 1rem; margin: 1rem 0; }
.problem p, .notice p { margin: .25rem 0; }
ul.schedules { list-style: none; padding: 0; }
.schedule { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; margin: 0 0 .75rem; }
.status { font-weight: 600; }
.status-completed { color: var(--good); } .status-refused { color: var(--bad); }
.warning, .stale { border-left: 4px solid #9a5b00; background: #fff4e0; padding: .5rem 1rem; margin: 1rem 0; }
.warning p, .stale p { margin: .25rem 0; }
.schedule.is-stale { border-color: #9a5b00; }
form.repin { margin: .5rem 0 .25rem; }
.filters ul { list-style: none; display: flex; flex-wrap: wrap; gap: .5rem; padding: 0; margin: 1rem 0; }
.filters a { display: inline-block; padding: .3rem .8rem; border: 1px solid var(--line); border-radius: 999px;
             color: var(--accent); text-decoration: none; }
.filters a:hover { text-decoration: underline; }
.filters a[aria-current=page] { background: var(--accent); border-color: var(--accent); color: #fff; font-weight: 600; }
.inline { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.zone-form { margin: 0 0 1rem; }
.page-info { color: var(--muted); }
h3.day { border-bottom: 1px solid var(--line); padding-bottom: .25rem; margin: 1.25rem 0 .75rem; font-size: 1.05rem; }
h4 { font-size: 1.05rem; margin: 0 0 .5rem; }
.pager { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 1rem; margin: 1.5rem 0; }
.pager-top { margin: .5rem 0 1rem; }
.pager a { padding: .3rem 0; }
.pager a[rel=next] { margin-left: auto; }
a { color: var(--accent); }
.card-head { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: flex-start;
             gap: .5rem 1rem; margin: 0 0 .5rem; }
.card-head h3, .card-head h4 { margin: 0; }
/* On a phone, each fact's name goes above its value instead of squeezing it into a column. */
@media (max-width: 30rem) {
  main { padding: 1rem; }
  .schedule dl { grid-template-columns: 1fr; gap: 0; }
  .schedule dd { margin: 0 0 .4rem; }
}
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
"""
