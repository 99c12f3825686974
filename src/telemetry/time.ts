/** UTC calendar units shared by ingestion (which rollup row an event adds to) and analytics (window edges). */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** The finer rollup's bucket (./ingest-store.ts addRollups). */
export const BUCKET_MS = 300_000;

/** `YYYY-MM-DD` of the UTC day holding `date`. */
export const dayOf = (date: Date): string => date.toISOString().slice(0, 10);
export const startOfDay = (date: Date): Date => new Date(Math.floor(date.getTime() / DAY_MS) * DAY_MS);
export const startOfHour = (date: Date): Date => new Date(Math.floor(date.getTime() / HOUR_MS) * HOUR_MS);
export const startOfBucket = (date: Date): Date => new Date(Math.floor(date.getTime() / BUCKET_MS) * BUCKET_MS);
/** Monday 00:00 UTC of the ISO week holding `date`. */
export const startOfWeek = (date: Date): Date => {
  const day = startOfDay(date);
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
};
/** 00:00 UTC of a `YYYY-MM-DD` day, and of the day after it. */
export const dayStart = (day: string): Date => new Date(`${day}T00:00:00.000Z`);
export const nextDay = (day: string): Date => new Date(dayStart(day).getTime() + DAY_MS);
