/** Where the SCIM 2.0 service provider lives (RFC 7644 §3.13: the base URL of its endpoints). */
export const SCIM_BASE_PATH = '/scim/v2';
