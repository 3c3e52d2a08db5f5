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
/* On a laptop's screen the tables take the room (in 52rem a delivery's times wrapped over five
   lines at 1280 px); running text keeps its readable measure. */
@media (min-width: 75rem) { main { max-width: 72rem; } main p, main dl, main .field { max-width: 52rem; } }
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
.release-choice select { font: inherit; padding: .4rem .5rem; max-width: 100%; }
.choice { display: flex; gap: .5rem; align-items: center; margin: .2rem 0; }
button { font: inherit; padding: .45rem 1rem; border-radius: 4px; border: 1px solid var(--accent);
         background: var(--accent); color: #fff; cursor: pointer; }
a.button { display: inline-block; font: inherit; padding: .35rem .9rem; border-radius: 4px; text-decoration: none; }
a.button.cancel { background: #fff; color: var(--bad); border: 1px solid var(--bad); }
a.button.cancel:hover, a.button.secondary:hover, a.button.danger:hover { text-decoration: underline; }
a.button.secondary { background: #fff; color: var(--accent); border: 1px solid var(--accent); }
a.button.danger { background: #fff; color: var(--bad); border: 1px solid var(--bad); }
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
  dl.status-facts { grid-template-columns: 1fr; gap: 0; }
  dl.status-facts dd { margin: 0 0 .4rem; }
}
.notifications { margin-top: 2.5rem; border-top: 1px solid var(--line); }
.endpoint { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; margin: 0 0 1rem; }
.endpoint.is-failing { border-color: var(--bad); }
.endpoint-url { overflow-wrap: anywhere; }
.secret-value { display: inline-block; overflow-wrap: anywhere; background: #fff; padding: .2rem .4rem;
                border: 1px solid var(--line); border-radius: 4px; user-select: all; }
.endpoint-actions { display: flex; flex-wrap: wrap; gap: .5rem; margin: 0 0 .75rem; }
.endpoint-actions form { margin: 0; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
table.deliveries { border-collapse: collapse; width: 100%; font-size: .95rem; }
table.deliveries caption { text-align: left; font-weight: 600; padding: 0 0 .25rem; }
table.deliveries th, table.deliveries td { text-align: left; vertical-align: top; padding: .3rem .5rem .3rem 0;
                                          border-bottom: 1px solid var(--line); }
table.deliveries th { white-space: nowrap; }
.delivery-delivered { color: var(--good); } .delivery-failed { color: var(--bad); }
.endpoint-form input[type=url] { font: inherit; padding: .4rem .5rem; border: 1px solid #6e6e78; border-radius: 4px;
                                 width: 100%; max-width: 36rem; }
.endpoint-form input[type=url]:focus { outline: 3px solid #e37400; outline-offset: 2px; }
/* On a phone, each delivery (each refusal) is a small block of its cells, each named by its column. */
@media (max-width: 30rem) {
  table.deliveries thead, table.stacks thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  table.deliveries tr, table.stacks tr { display: block; border-bottom: 1px solid var(--line); padding: .3rem 0; }
  table.deliveries td, table.stacks td { display: block; border: 0; padding: .1rem 0; min-width: 0; white-space: normal; }
  table.deliveries td::before, table.stacks td::before { content: attr(data-label) ": "; font-weight: 600; }
  table.deliveries td.none { display: none; }
}
/* The operator page: tables, and charts drawn as inline SVG (classes only, no inline style). */
.stalled { color: var(--bad); font-weight: 600; }
.failing { border-left: 4px solid var(--bad); padding: 0 0 0 .75rem; margin: 0 0 1rem; }
.failing p { margin: 0 0 .25rem; }
.table-frame { overflow-x: auto; }
.table-frame { margin: 0 0 1.25rem; }
table { border-collapse: collapse; font-size: .92rem; }
.table-title { font-weight: 600; margin: 1rem 0 .25rem; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { border-bottom: 2px solid var(--muted); }
table.numbers td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.numbers th[scope=row], td.when { white-space: nowrap; }
tr.failed-row th, tr.failed-row td { background: #fdecec; }
.charts { display: grid; grid-template-columns: minmax(0, 1fr); gap: 1.75rem; margin: 1rem 0; }
figure.chart { margin: 0; min-width: 0; }
.chart h4 { margin: 0 0 .25rem; }
.chart svg[role=img] { display: block; width: 100%; height: auto; }
svg.key { flex: none; }
td.why { min-width: 16rem; }
.chart text { font: 15px system-ui, sans-serif; fill: var(--muted); }
.chart .y-label { text-anchor: end; dominant-baseline: middle; }
.chart .x-label { text-anchor: middle; }
.grid { stroke: #e3e3ea; stroke-width: 1; }
.axis { stroke: #6e6e78; stroke-width: 1.5; }
.series { fill: none; stroke-width: 3; stroke-linecap: round; stroke-linejoin: round; }
.series.max { stroke: #a50e0e; }
.series.p50 { stroke: #0b57d0; stroke-dasharray: 7 5; }
/* A lone point: the worst as a ring around the median's dot, so neither hides the other. */
.dot { r: 4.5px; stroke: none; } .dot.p50 { fill: #0b57d0; r: 3.5px; } .dot.backlog { fill: #5b3cc4; } .dot.cron { fill: #146c2e; }
.dot.max { fill: none; stroke: #a50e0e; stroke-width: 2.5; r: 7px; }
.series.rule { stroke: #9a5b00; stroke-width: 2; stroke-dasharray: 2 5; }
.series.backlog { stroke: #5b3cc4; }
.series.cron { stroke: #146c2e; }
.bar.completed { fill: #146c2e; }
.bar.retrying { fill: #c26100; }
.bar.refused { fill: #a50e0e; }
.bar.gap, .gap { fill: #e4e4ea; }
.failed { stroke: #a50e0e; stroke-width: 2; stroke-dasharray: 4 3; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; padding: 0; margin: .35rem 0; font-size: .92rem; }
ul.legend li { display: flex; align-items: center; gap: .4rem; }
.chart .summary { margin: .25rem 0 0; }
/* A chart shrinks to a phone's width: its labels grow in its own units to stay legible, and
   every second time label is left out so none touch. */
@media (max-width: 30rem) {
  .chart text { font-size: 26px; }
  .chart .minor { display: none; }
}
details.numbers { margin: 1rem 0; }
details.numbers summary { cursor: pointer; color: var(--accent); }
nav.rooms { flex-basis: 100%; }
nav.rooms ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; padding: 0; margin: 0; }
nav.rooms a { display: inline-block; padding: .2rem 0; }
nav.rooms a[aria-current=page] { color: var(--ink); font-weight: 700; text-decoration: none;
                                 border-bottom: 3px solid var(--accent); }
.news ul { padding-left: 1.25rem; } .news h2 { margin-top: .25rem; font-size: 1.05rem; }
ol.calendar { list-style: none; padding: 0; margin: 1rem 0; display: grid; gap: .75rem; }
.calendar-day { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; min-width: 0; }
.calendar-day.is-today { border: 2px solid var(--accent); }
.calendar-day h2 { font-size: 1rem; margin: 0 0 .4rem; }
.calendar-day ul { list-style: none; padding: 0; margin: 0; }
.calendar-change { padding: .3rem 0; border-top: 1px solid var(--line); overflow-wrap: anywhere; }
.calendar-change time { font-weight: 600; margin-right: .35rem; }
.calendar-change.is-flagged { border-left: 4px solid #9a5b00; padding-left: .4rem; }
.calendar-change .flag { margin: .2rem 0 0; font-size: .92rem; }
.calendar-day .empty { color: var(--muted); margin: 0; }
@media (min-width: 75rem) { ol.calendar-week { grid-template-columns: repeat(7, minmax(0, 1fr)); } }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
"""
