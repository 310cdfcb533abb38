/**
 * A timer that `wake()` ends early, so that `stop()` of a retry loop does not
 * wait out the loop's current delay. Waking when nothing sleeps does nothing.
 */
export class WakeableSleep {
  private wakeUp: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeUp = undefined;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
    });
  }

  wake(): void {
    this.wakeUp?.();
  }
}
