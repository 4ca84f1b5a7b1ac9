import { describe, expect, it } from 'vitest';
import { reconnectDelay } from './client';
import { ConnectionStatus } from './connection';

describe('reconnectDelay', () => {
  it('backs off from half a second to ten, with jitter of a quarter either way', () => {
    expect(reconnectDelay(0, () => 0.5)).toBe(500);
    expect(reconnectDelay(1, () => 0.5)).toBe(1000);
    expect(reconnectDelay(4, () => 0.5)).toBe(8000);
    expect(reconnectDelay(5, () => 0.5)).toBe(10_000);
    expect(reconnectDelay(60, () => 0.5)).toBe(10_000);
    expect(reconnectDelay(0, () => 0)).toBe(375);
    expect(reconnectDelay(60, () => 1)).toBe(12_500);
  });
});

describe('ConnectionStatus', () => {
  it('tells listeners of changes and counts comebacks', () => {
    const s = new ConnectionStatus();
    const seen: string[] = [];
    const stop = s.subscribe(() => seen.push(`${s.get()}/${s.reconnected()}`));
    expect(s.get()).toBe('connecting');
    s.set('connected');
    s.set('connected');
    s.set('reconnecting');
    s.set('reconnecting');
    s.set('connected', true);
    stop();
    s.set('reconnecting');
    expect(seen).toEqual(['connected/0', 'reconnecting/0', 'connected/1']);
  });
});
