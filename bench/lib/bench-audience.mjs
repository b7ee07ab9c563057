// The audience the segment benchmarks share (bench/segments.mjs, bench/scale.mjs): the contact
// rows they seed and the 3-filter condition they count.

/**
 * The SELECT list of one seeded contact for `i` (a generate_series value), in the column order
 * (project_id, email, subscribed, data, created_at, updated_at), `$1` being the project.
 * plan: 60% free / 30% pro / 10% enterprise; age: a number, or (20%) a numeric string; country;
 * score (a third without); company (a quarter).
 */
export const CONTACT_ROW_SQL = `
  SELECT $1, 'user' || i || '@bench' || (i % 5000) || '.example', random() < 0.9,
    jsonb_strip_nulls(jsonb_build_object(
      'plan', (ARRAY['free','free','free','free','free','free','pro','pro','pro','enterprise'])[1 + (i % 10)],
      'age', CASE WHEN i % 5 = 0 THEN to_jsonb((18 + i % 60)::text) ELSE to_jsonb(18 + i % 60) END,
      'country', (ARRAY['DE','FR','US','GB','ES','IT','NL','PL'])[1 + (i % 8)],
      'score', CASE WHEN i % 3 = 0 THEN NULL ELSE to_jsonb(round((random() * 100)::numeric, 1)) END,
      'company', CASE WHEN i % 4 = 0 THEN 'Company ' || (i % 997) END)),
    now() - (i % 730) * interval '1 day', now() - (i % 30) * interval '1 day'`;

/** pro plan AND a purchase within 30 days AND (country DE OR age > 40). */
export const SEGMENT_CONDITION = {
  logic: 'AND',
  groups: [{
    filters: [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' },
    ],
    conditions: { logic: 'OR', groups: [
      { filters: [{ field: 'data.country', operator: 'equals', value: 'DE' }] },
      { filters: [{ field: 'data.age', operator: 'greaterThan', value: 40 }] },
    ] },
  }],
};
