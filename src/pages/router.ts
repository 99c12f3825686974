import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../domain/deps';
import type { Front, FrontTools } from '../contract/fronts';
import { AppError, Invalid } from '../lib/errors';
import { templateContext } from '../mail/queue';
import { LINK_PATHS } from '../mail/templates';
import { acceptInvitationPage, submitAcceptInvitation } from './accept-invitation';
import {
  confirmEmailChangePage,
  declineSignUpPage,
  resetPasswordPage,
  submitConfirmEmailChange,
  submitDeclineSignUp,
  submitResetPassword,
  submitVerifyEmail,
  verifyEmailPage,
} from './account-links';
import { PAGE_HEADERS, messagePage, problemText } from './layout';

/** What a page handler gets: the services' dependencies with this request's audit context. */
export interface PageContext {
  deps: AppDeps;
  productName: string;
  ip: string;
  userAgent: string | undefined;
}

export interface PageResult {
  status: number;
  html: string;
}

type PageHandler = (ctx: PageContext, input: Record<string, string>) => Promise<PageResult>;

/** The form fields (or query values) a page reads: strings only, anything else is ignored. */
function fields(source: unknown, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!source || typeof source !== 'object') return out;
  for (const name of names) {
    const value = Object.prototype.hasOwnProperty.call(source, name) ? (source as Record<string, unknown>)[name] : undefined;
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

/**
 * The pages the links in messages open, served when APP_BASE_URL is the service itself
 * (docs/mail.md). A GET shows the form with the link's token in a hidden field; the form
 * POSTs to the same path, in the body, and the page calls the services the API routes call. These
 * are pages for people, not operations of the JSON contract: a front (src/contract/fronts.ts).
 */
export const pagesFront: Front = {
  name: 'pages',
  enabled: (settings) => servesPages(settings),
  formPaths: Object.values(LINK_PATHS),
  mount: (tools) => pagesRouter(tools),
};

function pagesRouter(tools: FrontTools): Router {
  const router = Router();
  const deps = tools.deps;
  const productName = templateContext(deps.settings.mail).productName;
  const context = (req: Request): PageContext => ({ deps: tools.requestDeps(req, null), productName, ip: req.ip ?? '', userAgent: req.get('user-agent') });
  const serve = (handler: PageHandler, names: readonly string[], from: 'query' | 'body') => async (req: Request, res: Response) => {
    let result: PageResult;
    try {
      result = await handler(context(req), fields(from === 'query' ? req.query : req.body, names));
    } catch (err) {
      result = errorPage(err, req, deps, productName);
    }
    res.status(result.status).set(PAGE_HEADERS).send(result.html);
  };

  router.get(LINK_PATHS.acceptInvitation, serve(acceptInvitationPage, ['token'], 'query'));
  router.post(LINK_PATHS.acceptInvitation, serve(submitAcceptInvitation, ['token', 'name', 'password'], 'body'));
  router.get(LINK_PATHS.verifyEmail, serve(verifyEmailPage, ['token'], 'query'));
  router.post(LINK_PATHS.verifyEmail, serve(submitVerifyEmail, ['token'], 'body'));
  router.get(LINK_PATHS.declineSignUp, serve(declineSignUpPage, ['token'], 'query'));
  router.post(LINK_PATHS.declineSignUp, serve(submitDeclineSignUp, ['token'], 'body'));
  router.get(LINK_PATHS.resetPassword, serve(resetPasswordPage, ['token'], 'query'));
  router.post(LINK_PATHS.resetPassword, serve(submitResetPassword, ['token', 'password'], 'body'));
  router.get(LINK_PATHS.confirmEmailChange, serve(confirmEmailChangePage, ['token'], 'query'));
  router.post(LINK_PATHS.confirmEmailChange, serve(submitConfirmEmailChange, ['token'], 'body'));
  return router;
}

/** An error no page handled itself: its message (never internals) for a 4xx, a plain apology for anything else. */
function errorPage(err: unknown, req: Request, deps: AppDeps, productName: string): PageResult {
  if (err instanceof Invalid) return { status: 400, html: messagePage('Something is missing', 'error', [problemText(err)], productName) };
  if (err instanceof AppError && err.status < 500) return { status: err.status, html: messagePage('That did not work', 'error', [err.message], productName) };
  (req.log ?? deps.logger).error({ err }, 'page failed');
  return { status: 500, html: messagePage('Something went wrong', 'error', ['Something went wrong on our side. Try again in a moment.'], productName) };
}

/** Whether links point at this service (its pages answer them) rather than at a client application. */
export function servesPages(settings: AppDeps['settings']): boolean {
  const app = new URL(settings.mail.appBaseUrl);
  return app.origin === new URL(settings.publicBaseUrl).origin && (app.pathname === '/' || app.pathname === '');
}
