#!/usr/bin/env node
/**
 * `durable-agents-with-postgres [--] <command> [args...]`: starts a private PostgreSQL, runs the
 * command with `DURABLE_AGENTS_PG_URL` set (every package's global setup then uses that server
 * instead of starting its own), stops and removes the server, and exits with the command's code.
 */
import { spawn } from "node:child_process";
import { startPostgres } from "./start-postgres.js";
import { POSTGRES_URL_VARIABLE } from "./test-database.js";

const args = process.argv.slice(2);
if (args[0] === "--") args.shift();
const [command, ...rest] = args;
if (!command) {
  process.stderr.write("usage: durable-agents-with-postgres [--] <command> [args...]\n");
  process.exit(2);
}

const server = await startPostgres();
const child = spawn(command, rest, {
  stdio: "inherit",
  env: { ...process.env, [POSTGRES_URL_VARIABLE]: server.connectionString },
});
const forward = (signal: NodeJS.Signals) => child.kill(signal);
process.on("SIGINT", forward);
process.on("SIGTERM", forward);
const code = await new Promise<number>((resolve) => {
  child.on("error", (error) => {
    process.stderr.write(`${error.message}\n`);
    resolve(127);
  });
  child.on("exit", (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
});
await server.stop();
process.exit(code);
