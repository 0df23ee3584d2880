/** Ports for tests: the same helpers npm start uses. */
export { freePort, freePortBlock, isListening } from '../../dev/ports';
