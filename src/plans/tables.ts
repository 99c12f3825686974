import type { Json } from '../db/columns';

export interface PlansTable {
  key: string;
  rank: number;
  max_members: number | null;
  max_workers: number | null;
  max_llm_providers: number | null;
  max_service_accounts: number | null;
  features: Json<Record<string, boolean>>;
}

export interface PlanTables {
  plans: PlansTable;
}
