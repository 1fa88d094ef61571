/**
 * The fingerprint of an agent definition (DESIGN §9): what a session is pinned to. A definition is
 * described as plain JSON (the runner's part comes from `Runner.describe()`, core adds the tools'
 * effects and approval rules); the fingerprint is a hash of that description's canonical form
 * (object keys sorted, no whitespace), so the same definition gives the same fingerprint in every
 * process, and any change to what is described gives another one.
 */
import { createHash } from "node:crypto";
import { ConfigurationError } from "./errors.js";
import { defaultToolEffect, policyTable, type ToolDescription, type ToolEffect, type ToolPolicies } from "./policy.js";

/** One agent of a runner's graph (the entry agent, or an agent it can hand off to). */
export interface AgentDescription {
  readonly name: string;
  /** The model name the agent calls, or null when the framework picks it. */
  readonly model: string | null;
  /** The instructions (system prompt); a function is described by a marker, not by its output. */
  readonly instructions: string | null;
  /** Every tool the model can call: its name and its argument schema (JSON Schema, or the framework's own spec). */
  readonly tools: readonly { readonly name: string; readonly parameters: unknown; readonly [key: string]: unknown }[];
  /** The names of the agents this one can hand off to. */
  readonly handoffs: readonly string[];
  /** Anything else the adapter considers part of the definition (JSON). */
  readonly [key: string]: unknown;
}

/** What a runner says its definition is (`Runner.describe()`): plain JSON. */
export interface RunnerDescription {
  /** The adapter package and its version, e.g. `{ name: "@durable-agents/openai-agents", version: "0.1.0" }`. */
  readonly adapter: { readonly name: string; readonly version: string };
  /** The entry agent first, then every agent reachable through handoffs. */
  readonly agents: readonly AgentDescription[];
  readonly [key: string]: unknown;
}

/** The approval rule of one tool: what the framework says, and what the session's policy (or the effect's default) says. */
export interface ToolApprovalRule {
  readonly framework: ToolDescription["approval"];
  readonly policy: boolean;
}

/** What a definition's fingerprint is computed from. */
export interface DefinitionDescription {
  /** The version of this description's layout (a new layout changes every fingerprint). */
  readonly format: 1;
  readonly agent: string;
  /** Every tool of the agent, by name, with the effect and approval rule the session gives it. */
  readonly tools: readonly {
    readonly name: string;
    readonly effect: ToolEffect;
    readonly approval: ToolApprovalRule;
  }[];
  /** The runner's own description, or null for a runner without `describe()`. */
  readonly runner: RunnerDescription | null;
}

/** A fingerprint: `fp1-` and 32 hex digits (the first 128 bits of the SHA-256 of the canonical description). */
export const fingerprintPattern = /^fp1-[0-9a-f]{32}$/;

/**
 * The canonical JSON text of a value: object keys in code-point order, no whitespace, properties
 * whose value is `undefined` left out (as `JSON.stringify` does). Throws `ConfigurationError` naming
 * the path of anything JSON cannot hold (a function, a symbol, a bigint, a number that is not
 * finite, a cycle).
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const write = (v: unknown, path: string): string => {
    if (v === null) return "null";
    switch (typeof v) {
      case "string":
        return JSON.stringify(v);
      case "boolean":
        return v ? "true" : "false";
      case "number":
        if (!Number.isFinite(v)) throw new ConfigurationError(`${path} is ${v}, which JSON cannot hold`);
        return JSON.stringify(v);
      case "object": {
        const toJSON = (v as { toJSON?: unknown }).toJSON;
        if (typeof toJSON === "function") return write(toJSON.call(v), path);
        if (seen.has(v)) throw new ConfigurationError(`${path} refers back to itself (a cycle)`);
        seen.add(v);
        try {
          if (Array.isArray(v)) {
            return `[${v.map((item, i) => (item === undefined ? "null" : write(item, `${path}[${i}]`))).join(",")}]`;
          }
          const record = v as Record<string, unknown>;
          const keys = Object.keys(record)
            .filter((key) => record[key] !== undefined)
            .sort();
          return `{${keys.map((key) => `${JSON.stringify(key)}:${write(record[key], `${path}.${key}`)}`).join(",")}}`;
        } finally {
          seen.delete(v);
        }
      }
      default:
        throw new ConfigurationError(`${path} is a ${typeof v}, which JSON cannot hold`);
    }
  };
  return write(value, "the description");
}

/** The fingerprint of a description. */
export function fingerprintOf(description: DefinitionDescription): string {
  return `fp1-${createHash("sha256").update(canonicalJson(description)).digest("hex").slice(0, 32)}`;
}

/** The description of a definition: core's part (tools, effects, approval rules) and the runner's. */
export function describeDefinition(
  agent: string,
  tools: readonly ToolDescription[],
  policies: ToolPolicies,
  runner: RunnerDescription | null,
): DefinitionDescription {
  const described = [...tools]
    .map((tool) => {
      const effect = policies[tool.name]?.effect ?? tool.defaultEffect ?? defaultToolEffect;
      const policy = policies[tool.name]?.needsApproval ?? policyTable[effect].approvalByDefault;
      return { name: tool.name, effect, approval: { framework: tool.approval, policy } };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A copy through the canonical form: what is stored is plain JSON, with nothing JSON cannot hold.
  const copy = runner === null ? null : (JSON.parse(canonicalJson(runner)) as RunnerDescription);
  return { format: 1, agent, tools: described, runner: copy };
}

/** One difference between two descriptions: the JSON path, and the value on each side (undefined: absent). */
export interface DescriptionChange {
  readonly path: string;
  readonly before: unknown;
  readonly after: unknown;
}

/**
 * What changed between two descriptions (e.g. the one a session was pinned to, from its
 * `definition_pinned` event, and a definition of today), path by path; tools and agents are matched
 * by name. Empty when they are the same.
 */
export function describeChanges(before: unknown, after: unknown): DescriptionChange[] {
  const changes: DescriptionChange[] = [];
  const named = (list: unknown[]): Map<string, unknown> | null => {
    const map = new Map<string, unknown>();
    for (const item of list) {
      const name = (item as { name?: unknown } | null)?.name;
      if (typeof name !== "string" || map.has(name)) return null;
      map.set(name, item);
    }
    return map;
  };
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (canonicalOrNull(a) === canonicalOrNull(b)) return;
    if (Array.isArray(a) && Array.isArray(b)) {
      const byNameA = named(a);
      const byNameB = named(b);
      if (byNameA && byNameB) {
        for (const name of new Set([...byNameA.keys(), ...byNameB.keys()])) {
          walk(byNameA.get(name), byNameB.get(name), `${path}[${JSON.stringify(name)}]`);
        }
        return;
      }
    } else if (isRecord(a) && isRecord(b)) {
      for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
        walk(a[key], b[key], path === "" ? key : `${path}.${key}`);
      }
      return;
    }
    changes.push({ path: path === "" ? "(root)" : path, before: a, after: b });
  };
  walk(before, after, "");
  return changes;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function canonicalOrNull(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  try {
    return canonicalJson(v);
  } catch {
    return String(v);
  }
}
