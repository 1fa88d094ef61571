export { ScriptedModel, scriptedInputFromItems, type ScriptedModelOptions } from "./scripted-model.js";
export { conformanceRunner, type ConformanceRunnerOptions } from "./conformance-runner.js";
