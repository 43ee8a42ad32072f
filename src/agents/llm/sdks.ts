// The LLM SDKs, loaded on first use rather than at start: together with their dependencies they are ~400 modules
// and a large share of a node's start-up CPU (issue 15 item 4), and a node that never calls a model needs neither.
// Each registers its error classes with retry.ts as it loads (no SDK loaded, no error of its kind can exist).
import type AnthropicSdk from '@anthropic-ai/sdk';
import type OpenAiSdk from 'openai';
import { registerSdkErrors } from './retry.ts';

export type OpenAiClass = typeof OpenAiSdk;
export type AnthropicClass = typeof AnthropicSdk;

let openAi: Promise<OpenAiClass> | undefined;
let anthropic: Promise<AnthropicClass> | undefined;

export function loadOpenAi(): Promise<OpenAiClass> {
  return (openAi ??= import('openai').then(({ default: sdk }) => {
    registerSdkErrors(sdk);
    return sdk;
  }));
}

export function loadAnthropic(): Promise<AnthropicClass> {
  return (anthropic ??= import('@anthropic-ai/sdk').then(({ default: sdk }) => {
    registerSdkErrors(sdk);
    return sdk;
  }));
}
