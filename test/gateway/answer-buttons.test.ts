import { describe, expect, it } from 'vitest';
import { answerBlocks, parseFeedbackValue, parseStopValue } from '../../adapters/slack/answer-buttons.js';
import { answerComponents, parseFeedbackCustomId, parseStopCustomId } from '../../adapters/discord/answer-buttons.js';

/** What an answer's buttons carry, and that a click's value reads back to it (and nothing else does). */
const TURN = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('answer buttons', () => {
  it('Slack: Stop while written, feedback when final, nothing for parts or without a turn id; values read back', () => {
    const live = answerBlocks('live', { turnId: TURN, recipientId: 'U123' })!;
    const stop = (live[0] as { elements: Array<{ value: string; action_id: string }> }).elements[0]!;
    expect(parseStopValue(stop.value)).toEqual({ turnId: TURN, requesterId: 'U123' });
    const final = answerBlocks('final', { turnId: TURN })!;
    const fb = (final[0] as { type: string; elements: Array<{ positive_button: { value: string }; negative_button: { value: string } }> });
    expect(fb.type).toBe('context_actions');
    expect(parseFeedbackValue(fb.elements[0]!.positive_button.value)).toEqual({ vote: 'up', turnId: TURN });
    expect(parseFeedbackValue(fb.elements[0]!.negative_button.value)).toEqual({ vote: 'down', turnId: TURN });
    expect(answerBlocks('part', { turnId: TURN })).toBeUndefined();
    expect(answerBlocks('final', {})).toBeUndefined();
    for (const bad of [undefined, '', 'x', `${TURN}|U1|extra`]) expect(parseStopValue(bad)).toBeUndefined();
    for (const bad of [undefined, '', 'up', `sideways|${TURN}`, `up|${TURN}|x`]) expect(parseFeedbackValue(bad)).toBeUndefined();
  });

  it('Discord: custom ids fit in 100 characters and read back; foreign ids are not ours', () => {
    const [stopRow] = answerComponents('live', { turnId: TURN, recipientId: '123456789012345678901' })!;
    const stopId = (stopRow!.components[0] as { custom_id: string }).custom_id;
    expect(stopId.length).toBeLessThanOrEqual(100);
    expect(parseStopCustomId(stopId)).toEqual({ turnId: TURN, requesterId: '123456789012345678901' });
    const [fbRow] = answerComponents('final', { turnId: TURN })!;
    const ids = fbRow!.components.map((c) => (c as { custom_id: string }).custom_id);
    expect(ids.map(parseFeedbackCustomId)).toEqual([{ vote: 'up', turnId: TURN }, { vote: 'down', turnId: TURN }]);
    expect(parseStopCustomId('hermes:approve:abc')).toBeUndefined();
    expect(parseFeedbackCustomId('hermes:fb:maybe:abc')).toBeUndefined();
  });
});
