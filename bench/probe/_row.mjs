// Runs only the bench's Restate row (what bench/src/main.ts runs for it), printing ratio per level.
import { runRestatePhase } from "/work/main/bench/dist/restate-phase.js";
const turns = Number(process.argv[2] ?? 12);
const f = await runRestatePhase({ sizes: [10, 100, 1000], turns, log: () => {} });
for (const l of f.levels)
  console.log(
    `${l.historyItems}: session ${l.session.median.toFixed(2)} bare ${l.bare.median.toFixed(2)} ratio ${l.ratio.toFixed(2)} | pos ${l.byPosition.session.map((x) => x.toFixed(1)).join(" ")} / ${l.byPosition.bare.map((x) => x.toFixed(1)).join(" ")} | outside ${l.outsideRunnerMsPerStep.toFixed(2)} journal ${l.journalBytesPerStep.toFixed(0)} cpu ${l.sessionCpuMsPerStep.endpoint.toFixed(1)}+${l.sessionCpuMsPerStep.server.toFixed(1)} vs ${l.bareCpuMsPerStep.endpoint.toFixed(1)}+${l.bareCpuMsPerStep.server.toFixed(1)}`,
  );
