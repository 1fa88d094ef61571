export { ScriptedLanguageModel, type ScriptedLanguageModelOptions } from "./scripted-language-model.js";
export { conformanceRunner, type ConformanceRunnerOptions } from "./conformance-runner.js";
