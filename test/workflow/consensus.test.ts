// Judge output parsing and the four consensus strategies of seed 002, with figures computed by hand (the formulas
// are in docs/WORKFLOWS.md "Templates, conditions and consensus"). Defaults: threshold 0.7, agreement_factor 0.7,
// self_confidence_factor 0.3.
import test from 'ava';
import { computeConsensus, judgeShortfall, parseJudgeOutput, type JudgeInput } from '../../src/workflow/consensus.ts';
import type { ConsensusSpec, ConsensusStrategy } from '../../src/workflow/manifest/types.ts';

const spec = (strategy: ConsensusStrategy, over: Partial<ConsensusSpec> = {}): ConsensusSpec => ({
  strategy,
  threshold: 0.7,
  min_judges_required: 1,
  confidence_weighting: { agreement_factor: 0.7, self_confidence_factor: 0.3 },
  ...over,
});

const judge = (agent_id: string, score: number, confidence: number, weight = 1): JudgeInput => ({
  agent_id, weight, verdict: { score, confidence, reasoning: 'a reason long enough' },
});

const near = (t: { true: (v: boolean, m?: string) => void }, actual: number, expected: number, label: string): void => {
  t.true(Math.abs(actual - expected) < 1e-9, `${label}: ${actual} != ${expected}`);
};

test('weighted_average: two judges 0.8/0.6 → score 0.7, agreement 1-2·0.1 = 0.8, confidence 0.7·0.8 + 0.3·0.8 = 0.8', (t) => {
  const r = computeConsensus(spec('weighted_average'), [judge('a', 0.8, 0.9), judge('b', 0.6, 0.7)]);
  near(t, r.score, 0.7, 'score');
  near(t, r.metadata.variance as number, 0.01, 'variance');
  near(t, r.metadata.agreement as number, 0.8, 'agreement');
  near(t, r.metadata.self_confidence as number, 0.8, 'self confidence');
  near(t, r.confidence, 0.8, 'confidence');
  t.is(r.strategy, 'weighted_average');
  t.true(r.binary_valid); // 0.7 >= threshold 0.7
});

test('weighted_average honours weights: (0.9·1 + 0.7·1 + 0.5·2)/4 = 0.65; variance 0.0275; confidence 0.722837…', (t) => {
  const r = computeConsensus(spec('weighted_average'), [judge('a', 0.9, 0.8), judge('b', 0.7, 0.6), judge('c', 0.5, 1.0, 2)]);
  near(t, r.score, 0.65, 'score');
  near(t, r.metadata.variance as number, 0.0275, 'variance');
  const agreement = 1 - 2 * Math.sqrt(0.0275); // 0.668337…
  near(t, r.metadata.agreement as number, agreement, 'agreement');
  near(t, r.metadata.self_confidence as number, 0.85, 'self confidence'); // (0.8 + 0.6 + 2·1.0)/4
  near(t, r.confidence, 0.7 * agreement + 0.3 * 0.85, 'confidence');
  t.true(Math.abs(r.confidence - 0.722837) < 1e-6);
  t.false(r.binary_valid);
});

test('weighted_average: identical scores have full agreement; confidence_weighting factors change the blend', (t) => {
  const same = computeConsensus(spec('weighted_average'), [judge('a', 0.8, 0.5), judge('b', 0.8, 0.5)]);
  near(t, same.metadata.agreement as number, 1, 'agreement');
  near(t, same.confidence, 0.7 * 1 + 0.3 * 0.5, 'confidence'); // 0.85
  const split = [judge('a', 0.8, 0.5), judge('b', 0.6, 0.5)]; // agreement 0.8, self 0.5
  near(t, computeConsensus(spec('weighted_average'), split).confidence, 0.7 * 0.8 + 0.3 * 0.5, 'default 0.71');
  const selfHeavy = spec('weighted_average', { confidence_weighting: { agreement_factor: 0.2, self_confidence_factor: 0.8 } });
  near(t, computeConsensus(selfHeavy, split).confidence, 0.2 * 0.8 + 0.8 * 0.5, 'self-heavy 0.56');
  // Judges split evenly between 0 and 1: no agreement at all.
  const opposed = computeConsensus(spec('weighted_average'), [judge('a', 1, 1), judge('b', 0, 1)]);
  near(t, opposed.metadata.agreement as number, 0, 'opposed agreement');
  near(t, opposed.confidence, 0.3, 'opposed confidence');
});

test('majority: 3 of 4 pass → valid, margin (3-1)/4 = 0.5, score = mean of the passing side', (t) => {
  const r = computeConsensus(spec('majority'), [judge('a', 0.9, 0.9), judge('b', 0.8, 0.2), judge('c', 0.75, 0.5), judge('d', 0.3, 1)]);
  t.true(r.binary_valid);
  near(t, r.confidence, 0.5, 'margin');
  near(t, r.score, (0.9 + 0.8 + 0.75) / 3, 'score');
  t.like(r.metadata, { votes_pass: 3, votes_fail: 1, tie: false });
});

test('majority: 4 of 4 → margin 1; 1 of 3 → invalid, margin 1/3, score = mean of the failing side; score at the threshold passes', (t) => {
  near(t, computeConsensus(spec('majority'), [judge('a', 0.7, 0), judge('b', 0.8, 0), judge('c', 0.9, 0), judge('d', 1, 0)]).confidence, 1, 'unanimous vote');
  const r = computeConsensus(spec('majority'), [judge('a', 0.9, 1), judge('b', 0.5, 1), judge('c', 0.6, 1)]);
  t.false(r.binary_valid);
  near(t, r.confidence, 1 / 3, 'margin');
  near(t, r.score, 0.55, 'failing side mean');
});

test('majority: a tie is no majority (invalid, confidence 0, score of the failing side); weights shape the score only', (t) => {
  const tie = computeConsensus(spec('majority'), [judge('a', 0.9, 1), judge('b', 0.8, 1), judge('c', 0.5, 1), judge('d', 0.3, 1)]);
  t.false(tie.binary_valid);
  t.is(tie.confidence, 0);
  near(t, tie.score, 0.4, 'score');
  t.like(tie.metadata, { tie: true, votes_pass: 2, votes_fail: 2 });
  // One judge, one vote: a heavy failing judge does not outvote two passing ones.
  const weighted = computeConsensus(spec('majority'), [judge('a', 0.9, 1, 2), judge('b', 0.8, 1), judge('c', 0.75, 1), judge('d', 0.1, 1, 10)]);
  t.true(weighted.binary_valid);
  near(t, weighted.score, (0.9 * 2 + 0.8 + 0.75) / 4, 'weighted winners 0.8375');
});

test('unanimous: all at or above threshold → valid, score the weighted mean, confidence the minimum confidence', (t) => {
  const r = computeConsensus(spec('unanimous'), [judge('a', 0.9, 0.9), judge('b', 0.8, 0.6), judge('c', 0.7, 0.8)]);
  t.true(r.binary_valid);
  near(t, r.score, 0.8, 'score');
  near(t, r.confidence, 0.6, 'min confidence');
});

test('unanimous: one judge below → invalid, score the lowest score, confidence still the minimum', (t) => {
  const r = computeConsensus(spec('unanimous'), [judge('a', 0.9, 0.9), judge('b', 0.65, 0.95), judge('c', 0.8, 0.5)]);
  t.false(r.binary_valid);
  near(t, r.score, 0.65, 'lowest score');
  near(t, r.confidence, 0.5, 'min confidence');
  t.deepEqual(r.metadata.failing, ['b']);
});

test('best_of_n over 4 judges, n=2: rank by score×confidence (0.72, 0.60, 0.45, 0.38), average the top two', (t) => {
  const js = [judge('j1', 0.9, 0.5), judge('j2', 0.8, 0.9), judge('j3', 0.6, 1.0), judge('j4', 0.95, 0.4)];
  const r = computeConsensus(spec('best_of_n', { n: 2 }), js);
  t.deepEqual(r.metadata.selected, ['j2', 'j3']);
  t.deepEqual((r.metadata.ranking as { agent_id: string }[]).map((x) => x.agent_id), ['j2', 'j3', 'j1', 'j4']);
  near(t, r.score, 0.7, 'score (0.8+0.6)/2');
  near(t, r.confidence, 0.7 * 0.8 + 0.3 * 0.95, 'confidence 0.845');
  t.true(r.binary_valid);
  // With weights 3 and 1 on the selected two: (0.8·3 + 0.6)/4 = 0.75; variance (3·0.05² + 0.15²)/4 = 0.0075.
  const weighted = computeConsensus(spec('best_of_n', { n: 2 }), [judge('j1', 0.9, 0.5), judge('j2', 0.8, 0.9, 3), judge('j3', 0.6, 1.0), judge('j4', 0.95, 0.4)]);
  near(t, weighted.score, 0.75, 'weighted score');
  near(t, weighted.metadata.variance as number, 0.0075, 'variance');
  near(t, weighted.confidence, 0.7 * (1 - 2 * Math.sqrt(0.0075)) + 0.3 * 0.925, 'weighted confidence');
  t.true(Math.abs(weighted.confidence - 0.856256) < 1e-6);
});

test('best_of_n: rank ties go to the higher score; n above the judge count takes all', (t) => {
  const r = computeConsensus(spec('best_of_n', { n: 1 }), [judge('low', 0.5, 0.8), judge('high', 0.8, 0.5)]);
  t.deepEqual(r.metadata.selected, ['high']);
  near(t, r.score, 0.8, 'score');
  const all = computeConsensus(spec('best_of_n', { n: 9 }), [judge('a', 0.8, 1), judge('b', 0.6, 1)]);
  t.is(all.metadata.n, 2);
  near(t, all.score, 0.7, 'all');
});

test('min_agreement_confidence also gates binary_valid', (t) => {
  const js = [judge('a', 0.8, 0.9), judge('b', 0.6, 0.7)]; // score 0.7, confidence 0.8
  t.true(computeConsensus(spec('weighted_average', { min_agreement_confidence: 0.8 }), js).binary_valid);
  t.false(computeConsensus(spec('weighted_average', { min_agreement_confidence: 0.85 }), js).binary_valid);
});

test('no judges: score 0, confidence 0, invalid; judgeShortfall enforces min_judges_required', (t) => {
  t.like(computeConsensus(spec('unanimous'), []), { score: 0, confidence: 0, binary_valid: false });
  t.is(judgeShortfall({ min_judges_required: 3 }, 2), 'only 2 of the 3 required judges completed');
  t.is(judgeShortfall({ min_judges_required: 3 }, 3), undefined);
  t.is(judgeShortfall({ min_judges_required: 1 }, 0), 'only 0 of the 1 required judges completed');
});

test('parseJudgeOutput accepts the seed shape, plain or inside a ```json fence', (t) => {
  const plain = parseJudgeOutput('{"score": 0.8, "confidence": 0.9, "reasoning": "covers every case", "suggestions": ["x"], "verdict": "pass"}');
  t.deepEqual(plain, { ok: true, verdict: { score: 0.8, confidence: 0.9, reasoning: 'covers every case', suggestions: ['x'], verdict: 'pass' } });
  const fenced = parseJudgeOutput('Here is my review:\n```json\n{"score": 0, "confidence": 1, "reasoning": "nothing works here"}\n```\n');
  t.deepEqual(fenced, { ok: true, verdict: { score: 0, confidence: 1, reasoning: 'nothing works here' } });
});

test('parseJudgeOutput refuses invalid JSON, missing fields, short reasoning, out-of-range values', (t) => {
  const cases: [string, RegExp][] = [
    ['not json at all', /not JSON/],
    ['```json\n{"score": 0.5,\n```', /does not parse/],
    ['{"confidence": 0.9, "reasoning": "long enough text"}', /missing required field "score"/],
    ['{"score": 0.9, "reasoning": "long enough text"}', /missing required field "confidence"/],
    ['{"score": 0.9, "confidence": 0.9}', /missing required field "reasoning"/],
    ['{"score": 0.9, "confidence": 0.9, "reasoning": "too short"}', /"reasoning" must have at least 10 characters/],
    ['{"score": 0.9, "confidence": 0.9, "reasoning": "   short    "}', /at least 10 characters/],
    ['{"score": 1.2, "confidence": 0.9, "reasoning": "long enough text"}', /field "score" must be <= 1/],
    ['{"score": -0.1, "confidence": 0.9, "reasoning": "long enough text"}', /field "score" must be >= 0/],
    ['{"score": 0.5, "confidence": 2, "reasoning": "long enough text"}', /field "confidence" must be <= 1/],
    ['{"score": "0.5", "confidence": 0.5, "reasoning": "long enough text"}', /field "score" must be number/],
    ['{"score": 0.5, "confidence": 0.5, "reasoning": "long enough text", "verdict": "maybe"}', /field "verdict"/],
    ['{"score": 0.5, "confidence": 0.5, "reasoning": "long enough text", "suggestions": [1]}', /field "suggestions.0" must be string/],
    ['[0.5]', /must be object/],
  ];
  for (const [text, reason] of cases) {
    const r = parseJudgeOutput(text);
    t.false(r.ok, text);
    if (!r.ok) t.regex(r.error, reason, text);
  }
});
