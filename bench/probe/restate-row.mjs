// Probe: the bench's Restate row alone (levels 10, 100 and 1,000 history items), one line per
// level: the session's and the bare handler's step medians, their ratio, medians by step position,
// the engine's time outside the runner, journal bytes and CPU per step (endpoint + server).
// usage: node probe/restate-row.mjs [turns per level=12]
import { runRestatePhase } from "../dist/restate-phase.js";

const turns = Number(process.argv[2] ?? 12);
const figures = await runRestatePhase({ sizes: [10, 100, 1000], turns, log: () => {} });
const f = (x) => x.toFixed(2);
for (const l of figures.levels)
  console.log(
    `${l.historyItems}: session ${f(l.session.median)} bare ${f(l.bare.median)} ratio ${f(l.ratio)} | by position ${l.byPosition.session.map((x) => x.toFixed(1)).join(" ")} / ${l.byPosition.bare.map((x) => x.toFixed(1)).join(" ")} | outside the runner ${f(l.outsideRunnerMsPerStep)} | journal ${l.journalBytesPerStep.toFixed(0)} B | CPU ${f(l.sessionCpuMsPerStep.endpoint)}+${f(l.sessionCpuMsPerStep.server)} vs ${f(l.bareCpuMsPerStep.endpoint)}+${f(l.bareCpuMsPerStep.server)}`,
  );
