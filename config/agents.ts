import { positiveInt } from './fields';

/** Agents and the customers assigned to them. */
export const agentSettings = {
  /**
   * The most assignments one unpaged answer of GET /v1/agents/{userId}/customers holds (spec
   * 4.6: "Response: array of Agent assignment"): far above any real agent's book. An agent with
   * more is 400, told to page with size and the Link header.
   */
  AGENT_CUSTOMERS_MAX: positiveInt(10_000),
};
