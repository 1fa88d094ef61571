export { ScriptedLanguageModel, type ScriptedLanguageModelOptions } from "./scripted-language-model.js";
export { conformanceRunner } from "./conformance-runner.js";
