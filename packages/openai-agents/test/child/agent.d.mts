import type { OpenAIAgentsRunner } from "../../src/index.js";
import type { ScriptedModel } from "../../src/testing/index.js";
export declare function buildRunner(): { runner: OpenAIAgentsRunner; model: ScriptedModel; runs: string[] };
