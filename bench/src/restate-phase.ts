/**
 * The Restate row: a session on `@durable-agents/engine-restate` next to a bare Restate handler
 * that runs the same number of `ctx.run` steps with the same payload sizes, both on one private
 * `restate-server` (from the `@restatedev/restate-server` npm package), both served by one HTTP/2
 * endpoint in this process, taking turns turn by turn, at 10, 100 and 1,000 history items: one
 * session per level, all filled first, then warm-up rounds and timed rounds that each run a turn of
 * both variants at every level, so no level runs on a colder server than another.
 *
 * A step is timed as in the other rows: step i lasts from the end of step i-1 (or from the moment
 * the turn's message is sent) to its own end, and the last step ends when the turn's end is seen:
 * for the session, `turn_completed` reaching a client that follows the session's events
 * (`followEvents`, one follower per level's session, as a UI keeps one open); for the bare
 * handler, the ingress answering the request. A step's end is marked
 * in the step itself (the model call's return, the tool body's return; each bare `ctx.run`
 * closure's return), so everything between two steps (the journal's round trips, the state
 * machine, the writes) is charged to a step. After each turn of either variant the row waits until
 * the endpoint runs nothing but the followers' long polls, so no turn runs beside what the turn
 * before it left running (a session turn's `ended` and its follower's next long poll: their CPU is
 * counted as the session's). Also: the whole turn, the drive's journal bytes per
 * step (`sys_journal`, kept for the benchmark), and CPU per step of this process (the endpoint
 * and the client) and of `restate-server` (`/proc`).
 */
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { defineSession, SessionClient } from "@durable-agents/core";
import { RestateSessionStore, restateSessions } from "@durable-agents/engine-restate";
import {
  freePort,
  queryRestate,
  quietLogger,
  type RestateServer,
  registerDeployment,
  startRestateServer,
} from "@durable-agents/engine-restate/testing";
import * as restate from "@restatedev/restate-sdk";
import { markedScriptedRunner, StepMarks } from "./marked-runner.js";
import { ownCpuMs, type Summary, summarize } from "./stats.js";

export interface RestateLevel {
  readonly historyItems: number;
  readonly turns: number;
  /** Steps of the session's turns (median, p99 of every step of every timed turn). */
  readonly session: Summary;
  /** Steps of the bare handler's turns. */
  readonly bare: Summary;
  /** session median / bare median. */
  readonly ratio: number;
  /** Whole turns: message sent -> turn_completed at the follower; request -> answer. */
  readonly sessionTurnMs: number;
  readonly bareTurnMs: number;
  readonly turnRatio: number;
  /** Median ms of each step position of a turn (1st model call, 1st tool call, ...): session and bare. */
  readonly byPosition: { readonly session: readonly number[]; readonly bare: readonly number[] };
  /**
   * Per step, the session's turn minus the time spent inside the runner (the scripted model's calls
   * and the tool bodies), median over the turns: what the engine itself costs, apart from the
   * runner's own work on a longer history.
   */
  readonly outsideRunnerMsPerStep: number;
  /** The drive invocation's journal of a timed turn, per step (median over the timed turns). */
  readonly journalBytesPerStep: number;
  readonly journalEntriesPerTurn: number;
  /** The payload sizes the bare handler's steps return (the session's step results, measured). */
  readonly bareStepBytes: readonly number[];
  /** CPU ms per step: this process (endpoint + client) and restate-server. */
  readonly sessionCpuMsPerStep: { readonly endpoint: number; readonly server: number };
  readonly bareCpuMsPerStep: { readonly endpoint: number; readonly server: number };
}

export interface RestateFigures {
  readonly restateVersion: string;
  readonly sdkVersion: string;
  readonly stepsPerTurn: number;
  readonly levels: readonly RestateLevel[];
}

const STEPS = 5;

/** CPU ms of a process so far, from /proc (utime + stime). */
function processCpuMs(pid: number | null): number {
  if (pid === null) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

export async function runRestatePhase(options: {
  readonly sizes: readonly number[];
  readonly turns: number;
  readonly log: (line: string) => void;
}): Promise<RestateFigures> {
  const steps = new StepMarks();
  const runner = markedScriptedRunner(steps);
  const definition = defineSession({ name: "bench", runner, policies: { look_up: { effect: "read" } } });
  const bare = restate.object({
    name: "benchBareSteps",
    handlers: {
      run: async (ctx: restate.ObjectContext, req: { sizes: number[] }) => {
        for (const size of req.sizes) {
          await ctx.run("step", () => {
            const payload = "x".repeat(size);
            steps.mark();
            return payload;
          });
        }
        return req.sizes.length;
      },
    },
    options: { journalRetention: 0 },
  });

  const server: RestateServer = await startRestateServer();
  const endpoint = http2.createServer();
  try {
    const engine = restateSessions({
      sessions: [definition],
      ingressUrl: server.ingressUrl,
      prefix: "bench",
      engineOptions: { journalRetention: { hours: 1 } },
    });
    // The invocations the endpoint runs at this moment, the followers' long polls (`next`) apart.
    let busyStreams = 0;
    endpoint.on("stream", (stream, headers) => {
      if (String(headers[":path"]).includes(`/${engine.names.watch}/`)) return;
      busyStreams += 1;
      stream.once("close", () => {
        busyStreams -= 1;
      });
    });
    endpoint.on(
      "request",
      restate.createEndpointHandler({ services: [...engine.services, bare], logger: quietLogger }),
    );
    const port = await freePort();
    await new Promise<void>((resolve) => endpoint.listen(port, "127.0.0.1", resolve));
    await registerDeployment(server.adminUrl, `http://127.0.0.1:${port}`);
    const store = new RestateSessionStore({ url: server.ingressUrl, prefix: "bench" });
    const client = new SessionClient({ store });
    const driveOf = (sessionId: string) =>
      `SELECT id FROM sys_invocation WHERE target_service_name = '${engine.names.session}'
       AND target_handler_name = 'drive' AND target_service_key = '${sessionId}' ORDER BY created_at DESC LIMIT 1`;

    /**
     * One follower of the session's events for a whole level, as a UI keeps one open (and as the
     * other rows' followers are): each turn's end is the next `turn_completed` (or `turn_failed`)
     * it sees.
     */
    class Follower {
      private readonly abort = new AbortController();
      private readonly ends: number[] = [];
      private waiter: ((at: number) => void) | null = null;
      private readonly loop: Promise<void>;
      constructor(sessionId: string, after: number) {
        this.loop = (async () => {
          for await (const event of client.followEvents(sessionId, { after, signal: this.abort.signal })) {
            if (event.type !== "turn_completed" && event.type !== "turn_failed") continue;
            const at = performance.now();
            if (this.waiter) this.waiter(at);
            else this.ends.push(at);
            this.waiter = null;
          }
        })().catch((error: unknown) => {
          this.error = error;
        });
      }
      private error: unknown = null;
      nextEnd(): Promise<number> {
        if (this.error !== null) return Promise.reject(this.error);
        const known = this.ends.shift();
        if (known !== undefined) return Promise.resolve(known);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error("no turn end seen within 60 s")), 60_000);
          this.waiter = (at) => {
            clearTimeout(timer);
            resolve(at);
          };
        });
      }
      async stop(): Promise<void> {
        this.abort.abort();
        await this.loop;
      }
    }

    /** One turn of the session; its step times and whole time. */
    async function sessionTurn(follower: Follower, sessionId: string, text: string) {
      steps.reset();
      const started = performance.now();
      await client.sendMessage(sessionId, text);
      const ended = await follower.nextEnd();
      return { ...stepTimes(started, steps.ends, ended), outsideRunnerMs: (ended - started - steps.inRunner) / STEPS };
    }

    async function bareTurn(key: string, sizes: readonly number[]) {
      steps.reset();
      const started = performance.now();
      await store.ingress.call("benchBareSteps", key, "run", { sizes });
      return stepTimes(started, steps.ends, performance.now());
    }

    function stepTimes(started: number, ends: readonly number[], ended: number) {
      // The last mark is the last step's own end; the step is charged until the turn's end is seen.
      const bounds = [started, ...ends.slice(0, STEPS - 1), ended];
      const steps = bounds.slice(1).map((end, i) => end - bounds[i]!);
      return { steps, turnMs: ended - started };
    }

    async function journalOf(sessionId: string) {
      const rows = await queryRestate<{ bytes: number; entries: number }>(
        server.adminUrl,
        `SELECT sum(raw_length) AS bytes, count(*) AS entries FROM sys_journal WHERE id = (${driveOf(sessionId)})`,
      );
      return { bytes: Number(rows[0]?.bytes ?? 0), entries: Number(rows[0]?.entries ?? 0) };
    }

    /** The sizes of the step results the last drive journaled (the 5 largest Run notifications, in order). */
    async function stepPayloads(sessionId: string): Promise<number[]> {
      const rows = await queryRestate<{ bytes: number; index: number }>(
        server.adminUrl,
        `SELECT raw_length AS bytes, "index" FROM sys_journal WHERE id = (${driveOf(sessionId)})
         AND entry_type = 'Notification: Run' ORDER BY "index"`,
      );
      // Clock reads are a few bytes: the step results are the larger ones.
      return rows
        .map((row) => Number(row.bytes))
        .filter((bytes) => bytes > 40)
        .slice(-STEPS);
    }

    /**
     * After every turn of either variant, until the endpoint serves nothing but the followers' long
     * polls: neither variant's turn runs beside what the other one left running (for the session,
     * the drive's `ended` and its follower's next long poll; its CPU is counted as the session's).
     */
    const settle = async () => {
      const until = performance.now() + 1_000;
      while (busyStreams > 0 && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 1));
    };

    const turnText = (tag: string) => `call look_up {"key":"a${tag}"}\nthen\ncall look_up {"key":"b${tag}"}`;
    /** One session per level, filled before anything is timed; the levels are then timed in turns. */
    interface Level {
      readonly size: number;
      readonly sessionId: string;
      readonly follower: Follower;
      readonly payloads: number[];
      readonly sessionSteps: number[];
      readonly bareSteps: number[];
      readonly sessionTurns: number[];
      readonly outside: number[];
      readonly bareTurns: number[];
      readonly journals: { bytes: number; entries: number }[];
      readonly cpu: { session: { own: number; server: number }; bare: { own: number; server: number } };
    }
    const levels: Level[] = [];
    for (const size of options.sizes) {
      options.log(`Restate: filling a session to ${size} history items`);
      const { sessionId } = await client.startSession({ agent: "bench" });
      let history = 0;
      while (history < size) {
        await client.sendMessage(sessionId, `fill ${history}`);
        await client.waitUntilIdle(sessionId);
        history = (await client.snapshot(sessionId)).messages.length;
      }
      const follower = new Follower(sessionId, (await store.loadSession(sessionId))!.lastEventSeq);
      // The first turn gives the payload sizes the bare handler returns.
      await sessionTurn(follower, sessionId, turnText(`w${size}`));
      levels.push({
        size,
        sessionId,
        follower,
        payloads: await stepPayloads(sessionId),
        sessionSteps: [],
        bareSteps: [],
        sessionTurns: [],
        outside: [],
        bareTurns: [],
        journals: [],
        cpu: { session: { own: 0, server: 0 }, bare: { own: 0, server: 0 } },
      });
    }
    // Warm-up rounds, then the timed ones: each round a turn of each variant at each level, so no
    // level is measured on a colder server or process than another (the filling of the larger
    // levels is a long warm-up of its own).
    for (let round = 0; round < 2 * options.turns; round++) {
      const timed = round >= options.turns;
      if (round === options.turns)
        options.log(`Restate: ${options.turns} turns of each variant at each level, levels and variants in turns`);
      for (const level of levels) {
        let own = ownCpuMs();
        let srv = processCpuMs(server.pid);
        const s = await sessionTurn(level.follower, level.sessionId, turnText(`${level.size}-${round}`));
        // What a turn leaves running after its end (the drive's `ended`, the follower's next long
        // poll) is the session's: it finishes before the bare turn starts, and its CPU is counted.
        await settle();
        const sessionCpu = { own: ownCpuMs() - own, server: processCpuMs(server.pid) - srv };
        if (timed) {
          level.sessionSteps.push(...s.steps);
          level.sessionTurns.push(s.turnMs);
          level.outside.push(s.outsideRunnerMs);
          level.journals.push(await journalOf(level.sessionId));
          level.cpu.session.own += sessionCpu.own;
          level.cpu.session.server += sessionCpu.server;
          await settle();
        }
        own = ownCpuMs();
        srv = processCpuMs(server.pid);
        const b = await bareTurn(`bare-${level.size}`, level.payloads);
        await settle();
        if (timed) {
          level.cpu.bare.own += ownCpuMs() - own;
          level.cpu.bare.server += processCpuMs(server.pid) - srv;
          level.bareSteps.push(...b.steps);
          level.bareTurns.push(b.turnMs);
        }
      }
    }
    const results: RestateLevel[] = [];
    for (const level of levels) {
      await level.follower.stop();
      const session = summarize(level.sessionSteps);
      const bareSummary = summarize(level.bareSteps);
      const sessionTurnMs = summarize(level.sessionTurns).median;
      const bareTurnMs = summarize(level.bareTurns).median;
      const perStep = (ms: number) => ms / (options.turns * STEPS);
      const positions = (steps: readonly number[]) =>
        Array.from({ length: STEPS }, (_, i) => summarize(steps.filter((_, j) => j % STEPS === i)).median);
      results.push({
        historyItems: level.size,
        turns: options.turns,
        session,
        bare: bareSummary,
        ratio: session.median / bareSummary.median,
        sessionTurnMs,
        bareTurnMs,
        turnRatio: sessionTurnMs / bareTurnMs,
        byPosition: { session: positions(level.sessionSteps), bare: positions(level.bareSteps) },
        outsideRunnerMsPerStep: summarize(level.outside).median,
        journalBytesPerStep: summarize(level.journals.map((j) => j.bytes)).median / STEPS,
        journalEntriesPerTurn: summarize(level.journals.map((j) => j.entries)).median,
        bareStepBytes: level.payloads,
        sessionCpuMsPerStep: { endpoint: perStep(level.cpu.session.own), server: perStep(level.cpu.session.server) },
        bareCpuMsPerStep: { endpoint: perStep(level.cpu.bare.own), server: perStep(level.cpu.bare.server) },
      });
    }
    const version = (await (await fetch(`${server.adminUrl}/version`)).json()) as { version?: string };
    await store.close();
    return {
      restateVersion: version.version ?? "unknown",
      sdkVersion: sdkVersion(),
      stepsPerTurn: STEPS,
      levels: results,
    };
  } finally {
    await new Promise<void>((resolve) => endpoint.close(() => resolve()));
    await server.stop();
  }
}

function sdkVersion(): string {
  try {
    const url = import.meta.resolve("@restatedev/restate-sdk/package.json");
    return (JSON.parse(readFileSync(new URL(url), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}
