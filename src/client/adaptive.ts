/**
 * Adaptive limits, the operator's side (core/adaptive.ts): turn a type's
 * adaptation on with its bounds, read its state and the trail of every
 * change, turn it off, override the limit by hand and resume. The workers
 * serving the type do the adapting (worker/adaptive-controller.ts).
 *
 * An operator wins: setting the type's limit by hand — here (override) or
 * through client.policies.update({ maxConcurrency }) — is written to the
 * trail and suspends adaptation, until `resume` or for `overrideForMs`.
 */
import { resolveAdaptiveConfig, type AdaptiveConfigInput, type AdaptiveState, type LimitChange, type LimitChangeKind } from '../core/adaptive.js';
import { checkTaskType } from '../core/definition.js';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { adaptiveStoreOf, type AdaptiveStore } from '../store/adaptive.js';
import { typePolicyKey } from '../core/policy-keys.js';
import type { PolicyInput, Store } from '../store/types.js';
import { checkActor, type Actor, type ActorOption } from './actors.js';

export type { AdaptiveConfigInput, AdaptiveState, LimitChange } from '../core/adaptive.js';

export interface OverrideOptions extends ActorOption {
  /** Adaptation resumes by itself after this long (database clock); absent or null: until `resume`. */
  overrideForMs?: number | null;
}

const MAX_OVERRIDE_MS = 30 * 24 * 3600 * 1000;

export class AdaptiveApi {
  private backing: Promise<AdaptiveStore> | null = null;

  constructor(
    private readonly store: Store,
    private readonly actor: Actor,
    /** Told of every change this API made (the metrics' counter of limit changes). */
    private readonly changed: (taskType: string, kind: LimitChangeKind) => void = () => undefined,
  ) {}

  /** Turns adaptation on for `type` (or changes its configuration): it starts from the type's policy limit, clamped to the bounds. */
  async set(type: string, config: AdaptiveConfigInput, options: ActorOption = {}): Promise<AdaptiveState> {
    checkTaskType(type);
    const resolved = resolveAdaptiveConfig(type, config);
    const state = await (await this.adaptive()).saveAdaptive({ config: resolved, actor: this.actorOf(options, 'adaptive.set') });
    this.changed(type, 'set');
    return state;
  }

  async get(type: string): Promise<AdaptiveState | null> {
    checkTaskType(type);
    return (await this.adaptive()).getAdaptive({ taskType: type });
  }

  /** Every type ever made adaptive (`enabled` false: turned off), by type. */
  async list(): Promise<AdaptiveState[]> {
    return (await this.adaptive()).listAdaptive();
  }

  /** Adaptation off; the limit stays where it is. NOT_FOUND when the type is not adaptive. */
  async disable(type: string, options: ActorOption = {}): Promise<AdaptiveState> {
    const state = await this.current(type);
    if (state.enabled && (await (await this.adaptive()).disable({ state, actor: this.actorOf(options, 'adaptive.disable') }))) this.changed(type, 'off');
    return (await this.get(type))!;
  }

  /** Sets the limit by hand and suspends adaptation (the policy's maxConcurrency is the same change). */
  async override(type: string, limit: number, options: OverrideOptions = {}): Promise<AdaptiveState> {
    const state = await this.current(type);
    if (!state.enabled) throw new ValidationError(`task type ${JSON.stringify(type)} is not adaptive now: change its policy instead`, 'type');
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
      throw new ValidationError(`limit must be an integer from 1 to 100000, got ${String(limit)}`, 'limit');
    await this.store.savePolicy({ policy: { ...(await this.policyOf(type)), maxConcurrency: limit } });
    await this.noteOverride(type, state.currentLimit, limit, options);
    return (await this.get(type))!;
  }

  /** Adaptation again after an override, from the limit in force. */
  async resume(type: string, options: ActorOption = {}): Promise<AdaptiveState> {
    const state = await this.current(type);
    if (state.overridden && (await (await this.adaptive()).resume({ state, actor: this.actorOf(options, 'adaptive.resume') }))) this.changed(type, 'resume');
    return (await this.get(type))!;
  }

  /** The type's trail, newest first (at most `limit`, default 100). */
  async history(type: string, options: { limit?: number } = {}): Promise<LimitChange[]> {
    checkTaskType(type);
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      throw new ValidationError(`limit must be an integer from 1 to 10000, got ${String(limit)}`, 'limit');
    return (await this.adaptive()).listLimitChanges({ taskType: type, limit });
  }

  /**
   * Called after an operator's write of a type's maxConcurrency (policies.update, override): when the type is
   * adaptive, the write is recorded and suspends adaptation. False: the type is not adaptive (nothing recorded).
   */
  async noteOverride(type: string, from: number | null, limit: number, options: OverrideOptions = {}): Promise<boolean> {
    const until = await this.overrideEnd(options.overrideForMs);
    const state = await this.get(type);
    if (!state?.enabled) return false;
    const applied = await (
      await this.adaptive()
    ).override({ taskType: type, from: from ?? state.currentLimit, limit, until, actor: this.actorOf(options, 'override') });
    if (applied) this.changed(type, 'override');
    return applied;
  }

  private async overrideEnd(forMs: number | null | undefined): Promise<Date | null> {
    if (forMs === undefined || forMs === null) return null;
    if (!Number.isInteger(forMs) || forMs < 1 || forMs > MAX_OVERRIDE_MS)
      throw new ValidationError(`overrideForMs must be an integer from 1 to ${MAX_OVERRIDE_MS} (30 days), got ${String(forMs)}`, 'overrideForMs');
    return new Date((await this.store.now()).getTime() + forMs);
  }

  private async current(type: string): Promise<AdaptiveState> {
    const state = await this.get(type);
    if (!state) throw new NotFoundError('adaptive limit of task type', type);
    return state;
  }

  private async policyOf(type: string): Promise<PolicyInput> {
    const policyKey = typePolicyKey(type);
    const found = (await this.store.listPolicies()).find((p) => p.policyKey === policyKey);
    if (!found) return { policyKey, taskType: type, maxConcurrency: null, maxAttempts: null, retryBaseDelayMs: null, enabled: true };
    return {
      policyKey,
      taskType: type,
      maxConcurrency: found.maxConcurrency,
      maxAttempts: found.maxAttempts,
      retryBaseDelayMs: found.retryBaseDelayMs,
      enabled: found.enabled,
    };
  }

  private actorOf(options: ActorOption, where: string): Actor {
    return options.actor === undefined ? this.actor : checkActor(options.actor, where);
  }

  private adaptive(): Promise<AdaptiveStore> {
    this.backing ??= adaptiveStoreOf(this.store);
    return this.backing;
  }
}
