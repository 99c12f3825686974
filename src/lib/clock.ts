/** Time comes from here so tests can place events at exact ages. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
