import { Body, Controller, Get, Path, Post, Query, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { ErrorModel } from '../../shared/dto/errors.js';
import type {
  ListBodyReviewSummary,
  ReviewComment,
  ReviewCommentInputBody,
  ReviewDetail,
  ReviewRequestChangesInputBody,
  ReviewState,
  ReviewSummary,
} from '../../shared/dto/reviews.js';
import { recordedActor } from '../../shared/events/request-actor.js';
import type { CityRuntime } from '../city-runtime.js';
import { pageOf } from './list-page.js';

/**
 * @param cityName City name.
 * @param bead The bead whose branch is reviewed.
 * @pattern cityName \S
 */
@Route('v0/city/{cityName}')
@Tags('Reviews')
@Response<ErrorModel>(404, 'City not running, or no review of that bead (`review-not-found`)')
export class ReviewsRoutes extends Controller {
  constructor(private readonly city: CityRuntime) {
    super();
  }

  /**
   * The city's reviews (beads closed in a worktree with `merge = "review"`), oldest first: each with its branch,
   * base, commits, diff stat and state.
   * @summary List reviews
   * @param agent Only this agent's.
   * @param rig Only this rig's agents'.
   * @param state Only those in this state.
   * @param limit Page size, 1–1000 (default 100; 0 means the default).
   * @param cursor `next_cursor` of the previous page.
   * @isInt limit
   * @minimum limit 0
   * @maximum limit 1000
   */
  @Get('reviews')
  @Response<ErrorModel>(400, 'Invalid cursor')
  public listReviews(
    @Path('cityName') _cityName: string,
    @Query() agent?: string,
    @Query() rig?: string,
    @Query() state?: ReviewState,
    @Query() limit?: number,
    @Query() cursor?: string,
  ): ListBodyReviewSummary {
    const all = this.city.reviews.list({ agent, rig, state });
    return pageOf(all, (r) => `${r.created_at} ${r.bead}`, 'rv', limit, cursor);
  }

  /**
   * A review: its state, commits, who decided and when, its comments, and its diff (unified, per file, from the
   * base commit the branch started at to the commit it was finished at; a file's part is cut at 64 KiB and files
   * past 1 MiB in all are left out, each marked `truncated`).
   * @summary Get a review
   */
  @Get('reviews/{bead}')
  public async getReview(@Path('cityName') _cityName: string, @Path() bead: string): Promise<ReviewDetail> {
    return this.city.reviews.detail(bead);
  }

  /**
   * Comments on a review, on the whole or anchored to a file of its diff and a line of that file's new side. A
   * file or line outside the diff is a 422. Records `review.commented`.
   * @summary Comment on a review
   */
  @Post('reviews/{bead}/comments')
  @SuccessResponse(201, 'Created')
  @Response<ErrorModel>(409, 'The review is merged or abandoned')
  @Response<ErrorModel>(422, 'Blank text, or a file or line outside the diff')
  public async commentReview(
    @Path('cityName') _cityName: string,
    @Path() bead: string,
    @Body() body: ReviewCommentInputBody,
  ): Promise<ReviewComment> {
    const comment = await this.city.reviews.comment(bead, body, recordedActor('api'));
    this.setStatus(201);
    return comment;
  }

  /**
   * Approves a pending review: it joins its rig's merge queue and the answer comes at once, the review `approved`
   * with its `queue_position` (1: landing now). The queue lands approved reviews one at a time in approval order,
   * each rebased onto what landed before it (at exactly the reviewed commit, never later commits of its branch),
   * checked with the city's `[review] check` when one is set, then fast-forwarded into its base. Outcomes are
   * recorded: `merged` (`review.merged`), `conflicted` with the reason and the files in the way
   * (`review.conflicted`), or — the check failed or timed out — `changes_requested` with its output sent to the
   * agent (`review.checked`, `review.changes_requested`). A review that is not pending, a branch that is gone, or
   * one force-moved so that the reviewed commit is no longer on it, is a 409.
   * @summary Approve a review
   */
  @Post('reviews/{bead}/approve')
  @Response<ErrorModel>(409, 'The review is not pending, or its branch is gone or no longer holds the reviewed commit')
  public async approveReview(@Path('cityName') _cityName: string, @Path() bead: string): Promise<ReviewSummary> {
    return this.city.reviews.approve(bead, recordedActor('api'));
  }

  /**
   * Sends a pending or conflicted review back: the bead reopens for the session that did it when it still lives
   * (else for its agent), told `text` and every comment with its file:line. Records `review.changes_requested`.
   * @summary Request changes to a review
   */
  @Post('reviews/{bead}/request-changes')
  @Response<ErrorModel>(409, 'The review is not pending or conflicted')
  @Response<ErrorModel>(422, 'Blank text')
  public async requestChanges(
    @Path('cityName') _cityName: string,
    @Path() bead: string,
    @Body() body: ReviewRequestChangesInputBody,
  ): Promise<ReviewSummary> {
    return this.city.reviews.requestChanges(bead, body.text, recordedActor('api'));
  }

  /**
   * Ends a review without merging: the branch stays where it is. Records `review.abandoned`.
   * @summary Abandon a review
   */
  @Post('reviews/{bead}/abandon')
  @Response<ErrorModel>(409, 'The review is already merged or abandoned')
  public async abandonReview(@Path('cityName') _cityName: string, @Path() bead: string): Promise<ReviewSummary> {
    return this.city.reviews.abandon(bead, recordedActor('api'));
  }
}
