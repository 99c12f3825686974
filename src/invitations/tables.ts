import type { Timestamp } from '../db/columns';

export interface InvitationsTable {
  id: string;
  organization_id: string;
  email: string;
  email_normalized: string;
  role: string;
  token_hash: string;
  status: 'pending' | 'accepted' | 'cancelled';
  invited_by_member_id: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  accepted_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  /** The latest message sent for it (its delivery record is read from mail_messages). */
  mail_message_id: string | null;
}

export interface PeopleTables {
  invitations: InvitationsTable;
}
